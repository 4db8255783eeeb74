// Package yamldocs cuts a multi-document YAML stream (kubectl's and
// Kueue's "---"-separated files) into its documents, keeping where each
// starts so that errors can name a line.
package yamldocs

import (
	"bytes"
	"slices"
)

// Doc is one document of a stream.
type Doc struct {
	// Index is the document's position among the non-empty documents,
	// from 0.
	Index int
	// Line is the 1-based line of the document's first line that is
	// neither blank nor a comment.
	Line int
	// Body is the document's text, separators excluded.
	Body []byte
}

// Split cuts data at "---" lines (a line that is "---" or starts with
// "--- "). Documents holding only blanks are dropped; comments stay in
// the body, so a document of comments only is kept and decodes to null.
func Split(data []byte) []Doc {
	var docs []Doc
	var cur bytes.Buffer
	start, lineNo, trivia := 1, 0, true
	flush := func() {
		trivia = true
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			docs = append(docs, Doc{Index: len(docs), Line: start, Body: slices.Clone(cur.Bytes())})
		}
		cur.Reset()
	}
	for line := range bytes.Lines(data) {
		lineNo++
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			flush()
			start = lineNo + 1
			continue
		}
		if trivia && (len(bytes.TrimSpace(t)) == 0 || bytes.HasPrefix(bytes.TrimSpace(t), []byte("#"))) {
			start = lineNo + 1
		} else {
			trivia = false
		}
		cur.Write(line)
	}
	flush()
	return docs
}
