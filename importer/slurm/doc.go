// Package slurm imports a Slurm network topology as a fleet
// (topology.Spec) and writes a fleet back as topology.conf.
//
// It reads the three forms Slurm users have:
//
//   - topology.conf for topology/tree: SwitchName, Switches, Nodes,
//     LinkSpeed. Switch heights count from the leaves as in Slurm; the
//     levels are the heights, top first, then the node.
//   - topology.conf for topology/block: BlockName, Nodes, BlockSizes (or
//     the older BlockLevels). Blocks aggregate in file order, placeholders
//     included; each aggregation size is a level.
//   - topology.yaml (Slurm 25.05+): a list of named tree or block
//     topologies, one picked by name.
//
// Hostlist expressions follow hostlist.c exactly (see ExpandHostlist);
// CompressHostlist is its inverse for writing.
//
// A topology file is not always a tree: switches may have several parents,
// nodes several leaves or none, branches different depths. Slurm accepts
// these with warnings. This package resolves each with a documented policy
// and reports it as a typed Warning (see WarningKind); Options.Strict
// turns the ones that change the shape into errors. The result is never a
// silently different fleet. What is read but changes nothing (LinkSpeed)
// is listed in Result.Notes.
//
// What it is not: it does not read slurm.conf. GPU counts, flavor and
// pool come from Options (default 8 H100 per node), and Options.Nodes
// says which nodes Slurm knows. Ring, torus3d and flat topologies are not
// level trees and are refused with ErrUnsupported, in topology.yaml and
// (RingName records) in topology.conf alike.
//
// Every refusal is a *ParseError carrying the line (topology.conf) or the
// name of the topology, switch or block, wrapping an ErrX sentinel:
//
//	res, err := slurm.ParseConf(data, slurm.Options{GPUsPerNode: 8, Flavor: "H100"})
//	if err != nil {
//		return err // errors.Is(err, slurm.ErrCycle), errors.As(err, &pe) ...
//	}
//	for _, w := range res.Warnings {
//		log.Print(w) // e.g. warning padded: line 4: "no-topology": height 0 padded up to 2
//	}
//	fleet, err := topology.New(res.Spec)
package slurm
