// Command scenarios plays the situations the design names on the
// reference fleet and prints every host call with the scheduler's answer:
// the decisions, the occupancy map, explanations and the utilisation
// review.
//
//	go run ./examples/scenarios                  # list them (or -h)
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
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
		var b strings.Builder
		err := play(n, &b)
		io.WriteString(w, wrap(b.String(), width))
		if err != nil {
			return err
		}
	}
	return nil
}

// width is the console's: longer lines (node lists, long commands) wrap.
const width = 100

// wrap breaks every line of s longer than cols at spaces; the lines it
// adds keep the line's indent and four spaces more. A word longer than a
// line stays whole.
func wrap(s string, cols int) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		body := strings.TrimSuffix(line, "\n")
		nl := line[len(body):]
		lead := len(body) - len(strings.TrimLeft(body, " "))
		pad := body[:lead] + "    "
		for len(body) > cols {
			cut := strings.LastIndexByte(body[:cols+1], ' ')
			if cut <= lead {
				if next := strings.IndexByte(body[cols:], ' '); next >= 0 {
					cut = cols + next
				} else {
					break
				}
			}
			b.WriteString(body[:cut] + "\n")
			body, lead = pad+strings.TrimLeft(body[cut:], " "), len(pad)
		}
		b.WriteString(body + nl)
	}
	return b.String()
}

func firstComment(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return strings.TrimPrefix(line, "# ")
}

// play runs one scenario and prints each command and what it returned.
func play(name string, w io.Writer) error {
	text, ok := script.Scenario(name)
	if !ok {
		return fmt.Errorf("no scenario %q: run without arguments for the list, or name one of %s, or all",
			name, strings.Join(script.Scenarios(), ", "))
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
