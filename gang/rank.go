package gang

// RankGroup asks that every Size consecutive ranks of a pod set run inside
// one domain of Level: 8 tensor-parallel ranks in one NVLink domain, the
// ranks of a pipeline stage under one leaf switch. A pod's index within its
// pod set is its rank, so group i holds ranks i*Size to (i+1)*Size-1.
//
// A pod set lists its groups from the smallest up; each Size is a multiple
// of the one before, and each Level is at or above the one before, so the
// groups nest (stages of 32 ranks under one spine, made of groups of 8 on
// one leaf). Size must divide the pod set's count, so every group is whole.
type RankGroup struct {
	// Size is the ranks per group: 1 <= Size <= Count, dividing Count.
	Size int `json:"size"`
	// Level is the level one domain of which holds each group ("leaf").
	Level string `json:"level"`
	// Required makes the group a constraint: the workload is placed with
	// every such group inside one domain of its level, or not at all.
	// Otherwise the group is a wish that placement honours when it can,
	// giving up the largest unmet wishes first.
	Required bool `json:"required,omitempty"`
}

// RankGrouped reports whether the pod set asks for rank groups.
func (p PodSet) RankGrouped() bool { return len(p.RankGroups) > 0 }
