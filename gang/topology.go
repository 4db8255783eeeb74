package gang

// TopologyRequest says how close together a workload's pods must be.
// Levels are named as the fleet names them (e.g. "spine", "leaf", "node"),
// ordered from the top of the tree down; "" means no request.
//
// Placement searches from Preferred up toward Required and takes the first
// level where one domain holds every pod.
type TopologyRequest struct {
	// Required is the level one domain of which must hold every pod
	// ("spine": the whole gang under one spine switch). "" = anywhere.
	Required string `json:"required,omitempty"`
	// Preferred is the level to try first ("leaf"); it must be at or below
	// Required. Set alone it is a wish with no hard constraint.
	Preferred string `json:"preferred,omitempty"`
	// Segment optionally splits one pod set into equal groups, each confined
	// to one domain of a level. The zero Segment means no segments.
	Segment Segment `json:"segment,omitzero"`
}

// Segment splits the pods of one pod set into groups of Size consecutive
// pods, each group inside one domain of Level, all groups inside the
// Required domain: a tensor-parallel group of 8 nodes per leaf, as with
// Slurm's --segment or KAI's segmented subgroups.
//
// Size must divide the pod set's count (as Slurm requires of --segment),
// so every group is whole. Level must be at or below the workload's
// required level.
type Segment struct {
	// Size is the pods per segment; 0 means no segments.
	Size int `json:"size,omitempty"`
	// Level is the level each segment must fit inside.
	Level string `json:"level,omitempty"`
	// PodSet names the pod set to split. It may be "" only when the
	// workload has a single pod set; the other pod sets are not segmented.
	PodSet string `json:"podSet,omitempty"`
}

// Enabled reports whether the workload asks for segments.
func (s Segment) Enabled() bool { return s.Size > 0 }

// Spread caps how many pods of the workload may share one failure domain,
// so losing a node or a leaf switch takes down only part of an inference
// service. It counts the pods of all pod sets together. Zero fields mean no
// limit; the zero Spread asks for nothing.
type Spread struct {
	// MaxPerNode is the most pods of this workload on one node.
	MaxPerNode int `json:"maxPerNode,omitempty"`
	// MaxPerDomain is the most pods in one domain of Level.
	MaxPerDomain int `json:"maxPerDomain,omitempty"`
	// Level names the domains MaxPerDomain counts in ("leaf"). It must lie
	// below the required level: a spread over domains that must all be one
	// domain is either void or impossible.
	Level string `json:"level,omitempty"`
}
