// Command scenarios plays the situations the design names on the
// reference fleet and prints every host call with the scheduler's answer:
// the decisions, the occupancy map, explanations and the utilisation
// review.
//
//	go run ./examples/scenarios                  # list them
//	go run ./examples/scenarios inference_spike  # play one
//	go run ./examples/scenarios all              # play them all
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fleetsched/fleet/internal/script"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	names := script.Scenarios()
	if len(args) == 0 {
		fmt.Fprintln(w, "scenarios (go run ./examples/scenarios NAME, or all):")
		for _, n := range names {
			text, _ := script.Scenario(n)
			fmt.Fprintf(w, "  %-24s %s\n", n, firstComment(text))
		}
		return nil
	}
	if args[0] != "all" {
		names = args
	}
	for _, n := range names {
		if err := play(n, w); err != nil {
			return err
		}
	}
	return nil
}

func firstComment(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return strings.TrimPrefix(line, "# ")
}

// play runs one scenario and prints each command and what it returned.
func play(name string, w io.Writer) error {
	text, ok := script.Scenario(name)
	if !ok {
		return fmt.Errorf("no scenario %q", name)
	}
	blocks, err := script.Parse(text)
	if err != nil {
		return err
	}
	r, err := script.NewRunner()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "=== %s\n", name)
	for _, b := range blocks {
		for _, c := range b.Comments {
			if c != "" {
				fmt.Fprintln(w, c)
			}
		}
		got, err := r.Exec(b.Command)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(w, "[%s] > %s\n%s", r.Now.Format("15:04:05"), b.Command, indent(got))
	}
	fmt.Fprintln(w)
	return nil
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			b.WriteString("    " + line)
		}
	}
	return b.String()
}
