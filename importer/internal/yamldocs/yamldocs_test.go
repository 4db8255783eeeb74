package yamldocs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsched/fleet/importer/internal/yamldocs"
)

func TestSplitKeepsEachDocumentsFirstLine(t *testing.T) {
	in := "# header\n---\n\n# about a\na: 1\n---\nb: 2\n--- # c\nc: 3\n---\n\n"
	got := yamldocs.Split([]byte(in))
	assert.Equal(t, []yamldocs.Doc{
		{Index: 0, Line: 2, Body: []byte("# header\n")}, // comments only: the line after them
		{Index: 1, Line: 5, Body: []byte("\n# about a\na: 1\n")},
		{Index: 2, Line: 7, Body: []byte("b: 2\n")},
		{Index: 3, Line: 9, Body: []byte("c: 3\n")},
	}, got)
	assert.Empty(t, yamldocs.Split([]byte("---\n\n---\n")))
}
