package kueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/fleetsched/fleet/importer/internal/quantity"
	"github.com/fleetsched/fleet/importer/internal/yamldocs"
	"github.com/fleetsched/fleet/quota"
)

// Group is Kueue's API group.
const Group = "kueue.x-k8s.io"

// DefaultResource is the GPU resource read unless Options.Resource says
// otherwise.
const DefaultResource = "nvidia.com/gpu"

// MaxFileSize bounds the files Parse reads.
const MaxFileSize = 16 << 20

// Options says which resource is the GPU and which others to read.
type Options struct {
	// Resource is the resource name whose quotas become fleet quotas;
	// "" means nvidia.com/gpu.
	Resource string
	// Resources lists the other covered resources whose quotas become
	// quota.ResourceQuota entries ("cpu" in millicores, "memory" in bytes,
	// extended resources as counts, rounded up), listed in
	// Spec.Resources in the order first met. A flavor of a group that
	// covers some of them but not the GPU gets a FlavorQuota of 0 GPUs.
	// Every resource neither names is reported in Notes.
	Resources []string
}

// PriorityClass is a WorkloadPriorityClass.
type PriorityClass struct {
	Name        string // the class's name
	Value       int32  // its priority
	Description string // its description, as written
}

// Flavor is a ResourceFlavor: the node labels that select its nodes and
// the Topology it uses, if any.
type Flavor struct {
	Name         string            // the flavor's name
	NodeLabels   map[string]string // the labels selecting its nodes
	TopologyName string            // the Topology it uses, "" for none
}

// Topology is a Topology object: node-label keys, top level first.
type Topology struct {
	Name   string   // the Topology's name
	Levels []string // its node-label keys, top level first
}

// LocalQueue is a namespaced LocalQueue and the ClusterQueue it feeds.
type LocalQueue struct {
	Namespace    string // its namespace
	Name         string // its name
	ClusterQueue string // the ClusterQueue it feeds
}

// Result is everything Parse read.
type Result struct {
	// Spec is the quota tree: a cohort per Cohort (explicit or implicit),
	// a queue per ClusterQueue, a flavor per ResourceFlavor that carries
	// GPU quota somewhere. quota.New accepts it.
	Spec            quota.Spec
	PriorityClasses []PriorityClass
	Flavors         []Flavor
	Topologies      []Topology
	LocalQueues     []LocalQueue
	Notes           []Note
	// Lines maps "Kind/name" to the first line of its document, so a host
	// can point at the object behind any quota node.
	Lines map[string]int
}

// obj is a decoded JSON object whose fields are taken one by one; what is
// left at the end was not modelled and becomes a Note.
type obj map[string]any

func (o obj) take(k string) (any, bool) {
	v, ok := o[k]
	delete(o, k)
	return v, ok && v != nil
}

type parser struct {
	res       *Result
	resource  string
	resources []string // Options.Resources
	errs      []error
	// current object
	d          yamldocs.Doc
	kind, name string
}

func (p *parser) fail(field string, err error, format string, args ...any) {
	p.errs = append(p.errs, &ObjectError{Doc: p.d.Index, Line: p.d.Line, Kind: p.kind, Name: p.name,
		Field: field, Detail: fmt.Sprintf(format, args...), Err: err})
}

func (p *parser) note(format string, args ...any) {
	p.res.Notes = append(p.res.Notes, Note{Line: p.d.Line, Kind: p.kind, Name: p.name, Detail: fmt.Sprintf(format, args...)})
}

// leftovers notes every field of o not taken, under the path prefix.
func (p *parser) leftovers(prefix string, o obj) {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		p.note("field %s%s not modelled; ignored", prefix, k)
	}
}

func (p *parser) str(o obj, field, path string) string {
	v, ok := o.take(field)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		p.fail(path+field, ErrInvalid, "want a string, got %v", v)
	}
	return s
}

func (p *parser) object(v any, path string) obj {
	if v == nil {
		return obj{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(path, ErrInvalid, "want an object")
		return obj{}
	}
	return obj(m)
}

func (p *parser) list(v any, path string) []any {
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		p.fail(path, ErrInvalid, "want a list")
	}
	return l
}

// quantity parses a Kubernetes quantity written as a string or a number.
func (p *parser) quantity(v any, path string) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		p.fail(path, ErrQuantity, "want a quantity, got %v", v)
		return resource.Quantity{}, false
	}
	q, err := quantity.Parse(s)
	if err != nil {
		p.fail(path, ErrQuantity, "%q: %v", s, err)
		return resource.Quantity{}, false
	}
	return q, true
}

// gpus turns a quantity into whole GPUs as Kueue does (rounding up),
// noting when it rounded. A quantity beyond quota.MaxAmount is refused on
// its exact value: apimachinery's Value() wraps or returns 0 past int64
// ("1e19", "100E"), which would read as a quota of 0.
func (p *parser) gpus(v any, path string) (int64, bool) {
	q, ok := p.quantity(v, path)
	if !ok {
		return 0, false
	}
	n, rounded, err := quantity.Ceil(q, quota.MaxAmount)
	if err != nil {
		p.fail(path, ErrQuantity, "%s: %v", quantityText(v), err)
		return 0, false
	}
	if rounded {
		p.note("%s %s rounded up to %d, as Kueue does", path, q.String(), n)
	}
	return n, true
}

// amount reads a quota of resource name in fleet units (see Options),
// bounded as quota bounds every amount.
func (p *parser) amount(name string, v any, path string) (int64, bool) {
	q, ok := p.quantity(v, path)
	if !ok {
		return 0, false
	}
	n, err := quantity.Amount(name, q)
	if err == nil && n > quota.MaxAmount {
		err = fmt.Errorf("%w: above %d", quantity.ErrOutOfRange, quota.MaxAmount)
	}
	if err != nil {
		p.fail(path, ErrQuantity, "%s: %v", quantityText(v), err)
		return 0, false
	}
	return n, true
}

// quantityText is a quantity as the file wrote it.
func quantityText(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// Parse reads a multi-document YAML file of Kueue objects: ClusterQueue,
// Cohort, ResourceFlavor, Topology, WorkloadPriorityClass and LocalQueue
// in API versions v1alpha1 (Cohort with spec.parent, Topology), v1beta1
// (ClusterQueue spec.cohort, Cohort spec.parentName) and v1beta2
// (spec.cohortName). Other kinds and groups are skipped with a Note;
// fields and resources fleet does not model are reported in Notes; status
// and metadata other than name and namespace are ignored.
//
// It refuses what Kueue's API server or controllers would: malformed
// documents, a kind in a version that never served it or in the
// pre-v1beta1 schema of Kueue v0.1-v0.2 (ErrVersion), duplicate objects,
// invalid enums, quantities and CEL rules (flavors listing exactly the
// covered resources, limits without a cohort, borrowWithinCohort with
// reclaimWithinCohort Never), cohort cycles, and whatever quota.New
// refuses. Every refusal is an *ObjectError naming the document line, kind
// and name; several are joined with errors.Join.
func Parse(data []byte, opts Options) (*Result, error) {
	if len(data) > MaxFileSize {
		return nil, &ObjectError{Detail: "file too large", Err: ErrSyntax}
	}
	p := &parser{res: &Result{Lines: map[string]int{}}, resource: opts.Resource, resources: opts.Resources}
	if p.resource == "" {
		p.resource = DefaultResource
	}
	for i, r := range opts.Resources {
		if r == "" || r == p.resource || slices.Contains(opts.Resources[:i], r) {
			return nil, &ObjectError{Detail: fmt.Sprintf("resource %q: names must be set, unique and not %s", r, p.resource), Err: ErrInvalidOption}
		}
	}
	b := &treeBuilder{p: p, kindOf: map[string]string{}}
	for _, d := range yamldocs.Split(data) {
		p.d, p.kind, p.name = d, "", ""
		js, err := yaml.YAMLToJSON(d.Body)
		if err != nil {
			p.fail("", ErrSyntax, "%v", err)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			p.fail("", ErrSyntax, "%v", err)
			continue
		}
		if v == nil {
			continue
		}
		top, ok := v.(map[string]any)
		if !ok {
			p.fail("", ErrSyntax, "a document must be an object")
			continue
		}
		if top["kind"] == "List" {
			for _, item := range p.list(top["items"], "items") {
				b.object(p.object(item, "items[]"))
			}
			continue
		}
		b.object(obj(top))
	}
	b.finish()
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	if _, err := quota.New(p.res.Spec); err != nil {
		var se *quota.SpecError
		if errors.As(err, &se) {
			kind := b.kindOf[se.Node]
			return nil, &ObjectError{Line: p.res.Lines[kind+"/"+se.Node], Kind: kind, Name: se.Node, Field: se.Field, Detail: se.Error(), Err: err}
		}
		return nil, &ObjectError{Detail: err.Error(), Err: err}
	}
	return p.res, nil
}

// served says whether Parse reads kind (known) and, if so, whether it reads
// it in version; when not, why says so. Kueue v0.1 served ClusterQueue and
// ResourceFlavor as v1alpha1 and v0.2 served them and LocalQueue as
// v1alpha2, in a schema v0.3's v1beta1 replaced (spec.resources with
// min/max quotas): they were served, in a form fleet does not read. The
// v1alpha1 Cohort and Topology are later kinds of the current schema.
func served(kind, version string) (known bool, why string) {
	switch kind {
	case "Cohort", "Topology", "ClusterQueue", "ResourceFlavor", "WorkloadPriorityClass", "LocalQueue":
	default:
		return false, ""
	}
	old := map[string][]string{
		"v1alpha1": {"ClusterQueue", "ResourceFlavor"},
		"v1alpha2": {"ClusterQueue", "ResourceFlavor", "LocalQueue"},
	}
	switch {
	case version == "v1beta1" || version == "v1beta2":
		return true, ""
	case version == "v1alpha1" && (kind == "Cohort" || kind == "Topology"):
		return true, ""
	case slices.Contains(old[version], kind):
		return true, "the pre-v1beta1 schema (Kueue v0.1-v0.2) is not supported; convert it to v1beta1 or v1beta2"
	case version == "v1alpha1" || version == "v1alpha2":
		return true, "never served in this version"
	}
	return true, "not a Kueue API version fleet reads (v1alpha1, v1beta1, v1beta2)"
}

type pending struct {
	spec quota.NodeSpec
	line int
}

// treeBuilder gathers cohorts and queues, then checks references.
type treeBuilder struct {
	p       *parser
	nodes   []pending
	kindOf  map[string]string // quota node name -> Kueue kind
	flavors []string          // ResourceFlavor order
	refs    []string          // flavors referenced for GPUs, first-reference order
	gpuFlv  map[string]bool
	cohorts []struct {
		name string
		line int
	} // cohorts referenced, in first-reference order
}

func (b *treeBuilder) object(o obj) {
	p := b.p
	apiVersion, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	meta := p.object(o["metadata"], "metadata")
	name, _ := meta["name"].(string)
	p.kind, p.name = kind, name
	group, version, _ := strings.Cut(apiVersion, "/")
	known, why := served(kind, version)
	if group != Group || !known {
		p.note("%s %s skipped: not a Kueue object fleet reads", apiVersion, kind)
		return
	}
	if why != "" {
		p.fail("apiVersion", ErrVersion, "%s %s: %s", kind, apiVersion, why)
		return
	}
	if name == "" {
		p.fail("metadata.name", ErrNoName, "")
		return
	}
	key := kind + "/" + name
	if kind == "LocalQueue" {
		ns, _ := meta["namespace"].(string)
		key = kind + "/" + ns + "/" + name
	}
	if line, dup := p.res.Lines[key]; dup {
		p.fail("metadata.name", ErrDuplicate, "first on line %d", line)
		return
	}
	p.res.Lines[key] = p.d.Line
	delete(o, "apiVersion")
	delete(o, "kind")
	delete(o, "metadata")
	delete(o, "status")
	spec := p.object(o["spec"], "spec")
	delete(o, "spec")
	switch kind {
	case "ClusterQueue":
		b.clusterQueue(version, spec)
	case "Cohort":
		b.cohort(version, spec)
	case "ResourceFlavor":
		b.flavor(spec)
	case "Topology":
		b.topology(spec)
	case "WorkloadPriorityClass":
		b.priorityClass(o)
	case "LocalQueue":
		ns, _ := meta["namespace"].(string)
		lq := LocalQueue{Namespace: ns, Name: name, ClusterQueue: p.str(spec, "clusterQueue", "spec.")}
		if lq.ClusterQueue == "" {
			p.fail("spec.clusterQueue", ErrInvalid, "required")
		}
		p.res.LocalQueues = append(p.res.LocalQueues, lq)
	}
	p.leftovers("spec.", spec)
	p.leftovers("", o)
}

func (b *treeBuilder) addNode(n quota.NodeSpec) {
	p := b.p
	if prev, clash := b.kindOf[n.Name]; clash {
		p.fail("metadata.name", ErrNameClash, "%s %q has the same name; fleet's quota tree has one namespace", prev, n.Name)
		return
	}
	b.kindOf[n.Name] = p.kind
	b.nodes = append(b.nodes, pending{spec: n, line: p.d.Line})
}

func (b *treeBuilder) refCohort(name string) {
	for _, c := range b.cohorts {
		if c.name == name {
			return
		}
	}
	b.cohorts = append(b.cohorts, struct {
		name string
		line int
	}{name, b.p.d.Line})
}

func (b *treeBuilder) clusterQueue(version string, spec obj) {
	p := b.p
	n := quota.NodeSpec{Name: p.name, Kind: quota.Queue}
	old := p.str(spec, "cohort", "spec.")
	cur := p.str(spec, "cohortName", "spec.")
	switch {
	case old != "" && cur != "" && old != cur:
		p.fail("spec.cohortName", ErrInvalid, "cohort %q and cohortName %q disagree", old, cur)
	case cur != "":
		n.Parent = cur
	default:
		n.Parent = old
	}
	if old != "" && version == "v1beta2" {
		p.note("spec.cohort is the v1beta1 name of spec.cohortName; read as such")
	}
	if n.Parent != "" {
		b.refCohort(n.Parent)
	}
	n.Quotas, n.ResourceGroups = b.resourceGroups(spec, n.Parent != "")
	if v, ok := spec.take("queueingStrategy"); ok {
		// quota spells Kueue's names; an empty or unknown one is refused.
		str, isStr := v.(string)
		if !isStr || str == "" || n.QueueingStrategy.UnmarshalText([]byte(str)) != nil {
			p.fail("spec.queueingStrategy", ErrInvalid, "%v", v)
		}
	}
	if v, ok := spec.take("preemption"); ok {
		n.Preemption = b.preemption(p.object(v, "spec.preemption"))
	}
	if v, ok := spec.take("flavorFungibility"); ok {
		n.FlavorFungibility = b.fungibility(p.object(v, "spec.flavorFungibility"))
	}
	n.Weight = b.fairSharing(spec)
	if v, ok := spec.take("namespaceSelector"); ok {
		if m, isMap := v.(map[string]any); !isMap || len(m) > 0 {
			spec["namespaceSelector"] = v // reported as not modelled
		}
	}
	b.addNode(n)
}

func (b *treeBuilder) cohort(version string, spec obj) {
	p := b.p
	n := quota.NodeSpec{Name: p.name, Kind: quota.Cohort}
	field := "parentName"
	if version == "v1alpha1" {
		field = "parent"
	}
	n.Parent = p.str(spec, field, "spec.")
	if other := map[string]string{"parent": "parentName", "parentName": "parent"}[field]; spec[other] != nil {
		p.fail("spec."+other, ErrInvalid, "not a field of %s Cohort (use %s)", version, field)
		delete(spec, other)
	}
	if n.Parent != "" {
		b.refCohort(n.Parent)
	}
	n.Quotas, n.ResourceGroups = b.resourceGroups(spec, n.Parent != "")
	n.Weight = b.fairSharing(spec)
	b.addNode(n)
}

func (b *treeBuilder) fairSharing(spec obj) *float64 {
	p := b.p
	v, ok := spec.take("fairSharing")
	if !ok {
		return nil
	}
	fs := p.object(v, "spec.fairSharing")
	defer p.leftovers("spec.fairSharing.", fs)
	wv, ok := fs.take("weight")
	if !ok {
		return nil
	}
	q, ok := p.quantity(wv, "spec.fairSharing.weight")
	if !ok {
		return nil
	}
	w := q.AsApproximateFloat64()
	if w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
		p.fail("spec.fairSharing.weight", ErrInvalid, "%s", q.String())
		return nil
	}
	return &w
}

func (b *treeBuilder) preemption(o obj) quota.Rules {
	p := b.p
	var r quota.Rules
	// quota spells Kueue's names for these rules; "" is Kueue's default.
	if v := p.str(o, "withinClusterQueue", "spec.preemption."); r.WithinQueue.UnmarshalText([]byte(v)) != nil {
		p.fail("spec.preemption.withinClusterQueue", ErrInvalid, "%q (Never, LowerPriority or LowerOrNewerEqualPriority)", v)
	}
	if v := p.str(o, "reclaimWithinCohort", "spec.preemption."); r.ReclaimWithinCohort.UnmarshalText([]byte(v)) != nil {
		p.fail("spec.preemption.reclaimWithinCohort", ErrInvalid, "%q (Never, LowerPriority or Any)", v)
	}
	if v, ok := o.take("borrowWithinCohort"); ok {
		bo := p.object(v, "spec.preemption.borrowWithinCohort")
		if pol := p.str(bo, "policy", "spec.preemption.borrowWithinCohort."); r.BorrowWithinCohort.Policy.UnmarshalText([]byte(pol)) != nil {
			p.fail("spec.preemption.borrowWithinCohort.policy", ErrInvalid, "%q (Never or LowerPriority)", pol)
		}
		if t, ok := bo.take("maxPriorityThreshold"); ok {
			num, isNum := t.(json.Number)
			v, err := strconv.ParseInt(string(num), 10, 32)
			if !isNum || err != nil {
				p.fail("spec.preemption.borrowWithinCohort.maxPriorityThreshold", ErrInvalid, "want an int32, got %v", t)
			} else {
				th := int32(v)
				r.BorrowWithinCohort.MaxPriorityThreshold = &th
			}
		}
		p.leftovers("spec.preemption.borrowWithinCohort.", bo)
	}
	if r.ReclaimWithinCohort == quota.ReclaimNever && r.BorrowWithinCohort.Policy != quota.BorrowNever {
		p.fail("spec.preemption.borrowWithinCohort.policy", ErrInvalid, "reclaimWithinCohort Never forbids borrowWithinCohort")
	}
	p.leftovers("spec.preemption.", o)
	return r
}

// resourceGroups reads the groups of a ClusterQueue or Cohort: quotas of
// the GPU resource and of Options.Resources become FlavorQuotas, other
// resources are noted. When more than one group has modelled flavors, the
// groups become quota.ResourceGroups (covered resources and flavors in
// order); one such group is the node's implicit group and is left out.
func (b *treeBuilder) resourceGroups(spec obj, hasParent bool) ([]quota.FlavorQuota, []quota.ResourceGroup) {
	p := b.p
	v, ok := spec.take("resourceGroups")
	if !ok {
		return nil, nil
	}
	var out []quota.FlavorQuota
	var groups []quota.ResourceGroup
	seenRes := map[string]bool{}
	seenFlv := map[string]bool{}
	for gi, g := range p.list(v, "spec.resourceGroups") {
		gpath := fmt.Sprintf("spec.resourceGroups[%d]", gi)
		go_ := p.object(g, gpath)
		var covered []string
		for _, r := range p.list(go_["coveredResources"], gpath+".coveredResources") {
			s, _ := r.(string)
			if s == "" || seenRes[s] {
				p.fail(gpath+".coveredResources", ErrInvalid, "resource %v empty or in two groups", r)
				continue
			}
			seenRes[s] = true
			covered = append(covered, s)
		}
		delete(go_, "coveredResources")
		if len(covered) == 0 {
			p.fail(gpath+".coveredResources", ErrInvalid, "required")
		}
		flavors := p.list(go_["flavors"], gpath+".flavors")
		delete(go_, "flavors")
		var rg quota.ResourceGroup
		for _, c := range covered {
			switch {
			case c == p.resource:
				rg.GPUs = true
			case slices.Contains(p.resources, c):
				rg.Resources = append(rg.Resources, c)
			}
		}
		for fi, f := range flavors {
			fpath := fmt.Sprintf("%s.flavors[%d]", gpath, fi)
			fo := p.object(f, fpath)
			fname := p.str(fo, "name", fpath+".")
			if fname == "" || seenFlv[fname] {
				p.fail(fpath+".name", ErrInvalid, "flavor %q empty or in two groups", fname)
				continue
			}
			seenFlv[fname] = true
			rs := p.list(fo["resources"], fpath+".resources")
			delete(fo, "resources")
			if len(rs) != len(covered) {
				p.fail(fpath+".resources", ErrInvalid, "flavor %q lists %d resources, the group covers %d", fname, len(rs), len(covered))
				continue
			}
			fq, modelled := quota.FlavorQuota{Flavor: fname}, false
			for ri, r := range rs {
				rpath := fmt.Sprintf("%s.resources[%d]", fpath, ri)
				ro := p.object(r, rpath)
				rname := p.str(ro, "name", rpath+".")
				if rname != covered[ri] {
					p.fail(rpath+".name", ErrInvalid, "%q where the group covers %q", rname, covered[ri])
					continue
				}
				nq, hasNominal := ro.take("nominalQuota")
				bl, hasBL := ro.take("borrowingLimit")
				ll, hasLL := ro.take("lendingLimit")
				if !hasNominal {
					p.fail(rpath+".nominalQuota", ErrInvalid, "required")
					continue
				}
				if (hasBL || hasLL) && !hasParent {
					p.fail(rpath, ErrInvalid, "borrowingLimit and lendingLimit need a cohort (parent)")
					continue
				}
				switch {
				case rname == p.resource:
					fq.Nominal, _ = p.gpus(nq, rpath+".nominalQuota")
					if hasBL {
						if n, ok := p.gpus(bl, rpath+".borrowingLimit"); ok {
							fq.BorrowingLimit = quota.LimitOf(n)
						}
					}
					if hasLL {
						if n, ok := p.gpus(ll, rpath+".lendingLimit"); ok {
							fq.LendingLimit = quota.LimitOf(n)
						}
					}
					modelled = true
				case slices.Contains(p.resources, rname):
					rq := quota.ResourceQuota{Name: rname}
					rq.Nominal, _ = p.amount(rname, nq, rpath+".nominalQuota")
					if hasBL {
						if n, ok := p.amount(rname, bl, rpath+".borrowingLimit"); ok {
							rq.BorrowingLimit = quota.LimitOf(n)
						}
					}
					if hasLL {
						if n, ok := p.amount(rname, ll, rpath+".lendingLimit"); ok {
							rq.LendingLimit = quota.LimitOf(n)
						}
					}
					fq.Resources = append(fq.Resources, rq)
					if !slices.Contains(p.res.Spec.Resources, rname) {
						p.res.Spec.Resources = append(p.res.Spec.Resources, rname)
					}
					modelled = true
				default:
					desc := fmt.Sprintf("nominal %v", nq)
					if hasBL {
						desc += fmt.Sprintf(", borrowingLimit %v", bl)
					}
					if hasLL {
						desc += fmt.Sprintf(", lendingLimit %v", ll)
					}
					p.note("resource %s of flavor %s not modelled (%s)", rname, fname, desc)
				}
				p.leftovers(rpath+".", ro)
			}
			if modelled {
				out = append(out, fq)
				rg.Flavors = append(rg.Flavors, fname)
				if !b.gpuFlvSeen(fname) {
					b.refs = append(b.refs, fname)
				}
			}
			p.leftovers(fpath+".", fo)
		}
		p.leftovers(gpath+".", go_)
		if len(rg.Flavors) > 0 {
			groups = append(groups, rg)
		}
	}
	if len(groups) < 2 {
		groups = nil
	}
	return out, groups
}

func (b *treeBuilder) gpuFlvSeen(f string) bool {
	if b.gpuFlv == nil {
		b.gpuFlv = map[string]bool{}
	}
	seen := b.gpuFlv[f]
	b.gpuFlv[f] = true
	return seen
}

func (b *treeBuilder) flavor(spec obj) {
	p := b.p
	f := Flavor{Name: p.name}
	if v, ok := spec.take("nodeLabels"); ok {
		for k, val := range p.object(v, "spec.nodeLabels") {
			s, isStr := val.(string)
			if !isStr {
				p.fail("spec.nodeLabels."+k, ErrInvalid, "want a string")
				continue
			}
			if f.NodeLabels == nil {
				f.NodeLabels = map[string]string{}
			}
			f.NodeLabels[k] = s
		}
	}
	f.TopologyName = p.str(spec, "topologyName", "spec.")
	b.flavors = append(b.flavors, f.Name)
	p.res.Flavors = append(p.res.Flavors, f)
}

func (b *treeBuilder) topology(spec obj) {
	p := b.p
	t := Topology{Name: p.name}
	v, _ := spec.take("levels")
	for i, l := range p.list(v, "spec.levels") {
		lo := p.object(l, fmt.Sprintf("spec.levels[%d]", i))
		key := p.str(lo, "nodeLabel", fmt.Sprintf("spec.levels[%d].", i))
		if key == "" || slices.Contains(t.Levels, key) {
			p.fail(fmt.Sprintf("spec.levels[%d].nodeLabel", i), ErrInvalid, "%q empty or repeated", key)
		}
		t.Levels = append(t.Levels, key)
		p.leftovers(fmt.Sprintf("spec.levels[%d].", i), lo)
	}
	if len(t.Levels) == 0 {
		p.fail("spec.levels", ErrInvalid, "required")
	}
	for i, l := range t.Levels {
		if l == "kubernetes.io/hostname" && i != len(t.Levels)-1 {
			p.fail("spec.levels", ErrInvalid, "kubernetes.io/hostname may only be the last level")
		}
	}
	p.res.Topologies = append(p.res.Topologies, t)
}

func (b *treeBuilder) priorityClass(o obj) {
	p := b.p
	pc := PriorityClass{Name: p.name, Description: p.str(o, "description", "")}
	v, ok := o.take("value")
	num, isNum := v.(json.Number)
	n, err := strconv.ParseInt(string(num), 10, 32)
	if !ok || !isNum || err != nil {
		p.fail("value", ErrInvalid, "an int32 is required, got %v", v)
		return
	}
	pc.Value = int32(n)
	p.res.PriorityClasses = append(p.res.PriorityClasses, pc)
}

// finish adds implicit cohorts, checks for cycles and fixes the flavor
// list.
func (b *treeBuilder) finish() {
	p := b.p
	for _, c := range b.cohorts {
		kind, ok := b.kindOf[c.name]
		if ok && kind == "Cohort" {
			continue
		}
		if ok {
			p.errs = append(p.errs, &ObjectError{Line: c.line, Kind: kind, Name: c.name, Err: ErrNameClash,
				Detail: "used as a cohort and defined as a " + kind})
			continue
		}
		b.kindOf[c.name] = "Cohort"
		p.res.Notes = append(p.res.Notes, Note{Line: c.line, Kind: "Cohort", Name: c.name, Detail: "implicit cohort: referenced, no Cohort object"})
		b.nodes = append(b.nodes, pending{spec: quota.NodeSpec{Name: c.name, Kind: quota.Cohort}, line: c.line})
	}
	parent := map[string]string{}
	for _, n := range b.nodes {
		parent[n.spec.Name] = n.spec.Parent
	}
	reported := map[string]bool{}
	for _, n := range b.nodes {
		seen := map[string]bool{}
		for cur := n.spec.Name; cur != ""; cur = parent[cur] {
			if seen[cur] {
				if !reported[cur] {
					var members []string
					for c := parent[cur]; ; c = parent[c] {
						reported[c] = true
						members = append(members, c)
						if c == cur {
							break
						}
					}
					slices.Sort(members)
					p.errs = append(p.errs, &ObjectError{Line: p.res.Lines["Cohort/"+cur], Kind: "Cohort", Name: cur, Field: "spec.parentName",
						Detail: "cycle through " + strings.Join(members, ", ") + "; Kueue disables every member", Err: ErrCycle})
				}
				break
			}
			seen[cur] = true
		}
	}
	for _, n := range b.nodes {
		p.res.Spec.Nodes = append(p.res.Spec.Nodes, n.spec)
	}
	for _, f := range b.flavors {
		if b.gpuFlv[f] {
			p.res.Spec.Flavors = append(p.res.Spec.Flavors, f)
		} else {
			p.res.Notes = append(p.res.Notes, Note{Line: p.res.Lines["ResourceFlavor/"+f], Kind: "ResourceFlavor", Name: f,
				Detail: "no " + p.resource + " quota uses it; not a quota flavor"})
		}
	}
	for _, f := range b.refs {
		if !slices.Contains(b.flavors, f) {
			p.res.Spec.Flavors = append(p.res.Spec.Flavors, f)
			p.res.Notes = append(p.res.Notes, Note{Kind: "ResourceFlavor", Name: f, Detail: "referenced by quotas, no ResourceFlavor object"})
		}
	}
}
