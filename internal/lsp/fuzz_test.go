package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// frame is one base-protocol frame holding body.
func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// session is a client's whole stream: initialize, open path with text,
// ask for completion and hover, change it, then shut down.
func session(path, text string) string {
	uri := pathURI(path)
	open, _ := json.Marshal(didOpenParams{TextDocument: textDocumentItem{URI: uri, Version: 1, Text: text}})
	change, _ := json.Marshal(didChangeParams{TextDocument: versionedTextDocumentIdentifier{URI: uri, Version: 2},
		ContentChanges: []contentChange{{Range: &lspRange{Start: position{Line: 0, Character: 1}, End: position{Line: 0, Character: 3}}, Text: "é"}}})
	return frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`) +
		frame(`{"jsonrpc":"2.0","method":"initialized","params":{}}`) +
		frame(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":`+string(open)+`}`) +
		frame(`{"jsonrpc":"2.0","id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"`+uri+`"},"position":{"line":0,"character":2}}}`) +
		frame(`{"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params":{"textDocument":{"uri":"`+uri+`"},"position":{"line":1,"character":4}}}`) +
		frame(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":`+string(change)+`}`) +
		frame(`{"jsonrpc":"2.0","id":4,"method":"shutdown"}`) +
		frame(`{"jsonrpc":"2.0","method":"exit"}`)
}

// FuzzServe feeds a client's byte stream to the server: framing, JSON and
// LSP requests as an editor (or anything else on stdin) may send them. It
// must never panic or hang, it returns when the stream ends, and every
// frame it writes is well-formed JSON-RPC 2.0 that the reader accepts.
func FuzzServe(f *testing.F) {
	tr := newTree(f, map[string]string{"agent/facets/profiles/p/config.json": validConfig})
	cfg := tr.path("agent/facets/profiles/p/config.json")
	for _, s := range []string{
		session(cfg, validConfig),
		session(cfg, `{"version": 1, "name": "q", "tools": []}`),
		session(tr.path("agent/agents/r.md"), "---\nthinking: extreme\ntools: read, \n---\nBody\n"),
		session(tr.path("agent/facets/MAIN.md"), "\xff\xfe"),
		frame(`{"jsonrpc":"2.0","id":1,"method":"shutdown"}`),
		frame(`not json`) + frame(`{"jsonrpc":"2.0","method":"exit"}`),
		"Content-Length: 99999999999\r\n\r\n",
		"Content-Length: 5\r\n\r\n{",
		"Content-Type: x\r\n\r\n{}",
		"Content-Length: -1\r\n\r\n",
		"\r\n\r\n\r\n",
		strings.Repeat("X", 5000) + "\r\n",
		frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":[]}`),
		frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"rootUri":"file:///nonexistent/dir"}}`) +
			frame(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///x/profiles/a.json","text":"{\"a\":"}}}`) +
			frame(`{"jsonrpc":"2.0","id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"file:///x/profiles/a.json"},"position":{"line":-5,"character":99999}}}`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		var out bytes.Buffer
		err := Serve(context.Background(), bytes.NewReader(stream), &out, tr.config())
		if err != nil && !strings.HasPrefix(err.Error(), "lsp: ") {
			t.Fatalf("Serve: error without its prefix: %v", err)
		}
		r := newReader(&out)
		for {
			m, err := r.read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("the server wrote a frame its own reader refuses: %v\n%q", err, out.String())
			}
			if m.JSONRPC != "2.0" {
				t.Fatalf("frame without jsonrpc 2.0: %+v", m)
			}
		}
	})
}

// FuzzDocument feeds any text as an open document of each kind to the
// completion, hover and position code, at any position: never a panic,
// and every range the server returns lies inside the document.
func FuzzDocument(f *testing.F) {
	for _, seed := range fuzzCorpora(f) {
		f.Add(seed, 0, 0)
		f.Add(seed, 1, 3)
	}
	f.Add("{\"tools\": [\"re", 0, 14)
	f.Add("---\ntools: read, 😀, |\n---\n", 1, 12)
	f.Add("{\"a\\\"\": \"\\", 0, 9)
	info, err := loadSchemaInfo()
	if err != nil {
		f.Fatal(err)
	}
	tr := newTree(f, nil)
	f.Fuzz(func(t *testing.T, text string, line, char int) {
		for _, path := range []string{"/fuzz/facets/profiles/p/config.json", "/fuzz/facets/profiles/p.json", "/fuzz/agents/r.md", "/fuzz/facets/MAIN.md"} {
			s := NewServer(io.Discard, tr.config())
			s.initialized, s.schemaInfo, s.opts = true, info, tr.opts
			uri := pathURI(path)
			s.docs[uri] = &document{uri: uri, path: path, version: 1, text: text}
			p := textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: position{Line: line, Character: char}}
			lines := newLineIndex(text)
			inside := func(r lspRange) {
				for _, p := range []position{r.Start, r.End} {
					if p.Line < 0 || p.Line >= len(lines.starts) || p.Character < 0 || p.Character > utf16Len(lines.line(p.Line)) {
						t.Fatalf("%s: range %+v outside the document %q", path, r, text)
					}
				}
			}
			for _, it := range s.completion(p).Items {
				if it.TextEdit != nil {
					inside(it.TextEdit.Range)
				}
				if !utf8.ValidString(it.Label) {
					t.Fatalf("label %q is not UTF-8", it.Label)
				}
			}
			s.hover(p)
			// A check position anywhere converts to one inside the buffer.
			inside(lspRange{Start: lines.position(line, char), End: lines.lineEnd(lines.position(line, char))})
			_ = applyChange(text, contentChange{Range: &lspRange{Start: position{Line: line, Character: char}, End: position{Line: char, Character: line}}, Text: "x"})
		}
	})
}

// fuzzCorpora returns the inputs of the repository's fuzz corpora
// (testdata/fuzz/*/* in every package: profiles, frontmatter, manifests,
// channel messages) and the testdata trees' files, as document texts.
func fuzzCorpora(tb testing.TB) []string {
	tb.Helper()
	var out []string
	files, _ := filepath.Glob("../../*/testdata/fuzz/*/*")
	more, _ := filepath.Glob("../../*/*/testdata/fuzz/*/*")
	for _, p := range append(files, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n")[1:] {
			open := strings.IndexByte(l, '(')
			if open < 0 || !strings.HasSuffix(l, ")") {
				continue
			}
			if v, err := strconv.Unquote(l[open+1 : len(l)-1]); err == nil {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatal("no fuzz corpus found under ../../*/testdata/fuzz")
	}
	return out
}

// TestCorporaAsDocuments opens every fuzz corpus input and every
// testdata tree file as a profile, a role file and MAIN.md in a running
// server: it must publish diagnostics for each and answer completion and
// hover everywhere in it, without crashing.
func TestCorporaAsDocuments(t *testing.T) {
	docs := fuzzCorpora(t)
	trees, _ := filepath.Glob("../../testdata/*/*.txtar")
	for _, p := range trees {
		if b, err := os.ReadFile(p); err == nil {
			docs = append(docs, string(b))
		}
	}
	tr := newTree(t, nil)
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	for i, text := range docs {
		for _, path := range []string{
			tr.path(fmt.Sprintf("agent/facets/profiles/p%d/config.json", i)),
			tr.path(fmt.Sprintf("agent/facets/profiles/l%d.json", i)),
			tr.path(fmt.Sprintf("agent/agents/r%d.md", i)),
			tr.path("agent/facets/MAIN.md"),
		} {
			// Discovery finds files on disk; the buffer stands in for it.
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, nil, 0o644)
			c.open(path, text)
			c.diagnostics(path)
			lines := newLineIndex(text)
			for n := 0; n < min(len(lines.starts), 20); n++ {
				for _, ch := range []int{0, 1, 3, utf16Len(lines.line(n))} {
					p := textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: pathURI(path)}, Position: position{Line: n, Character: ch}}
					if _, rerr := c.request("textDocument/completion", p); rerr != nil {
						t.Fatalf("completion: %s", rerr.Message)
					}
					if _, rerr := c.request("textDocument/hover", p); rerr != nil {
						t.Fatalf("hover: %s", rerr.Message)
					}
				}
			}
			c.notify("textDocument/didClose", didCloseParams{TextDocument: textDocumentIdentifier{URI: pathURI(path)}})
			c.diagnostics(path)
			os.Remove(path)
		}
	}
	c.stop()
}

// FuzzReadMessages fuzzes the message reader alone (framing and JSON), so
// the fuzzer runs fast: every read returns a message, a refusal that
// leaves the stream at the next frame, a framing error or the end; the
// reader never loops without consuming input; and an accepted message
// survives the writer and the reader unchanged.
func FuzzReadMessages(f *testing.F) {
	f.Add([]byte(session("/p/facets/profiles/p/config.json", validConfig)))
	f.Add([]byte(frame(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"a":[1,2]}}`) + frame(`[1]`) + frame(`{}`)))
	f.Add([]byte("content-length: 2\n\n{}Content-Length: 2\r\n\r\n"))
	f.Add([]byte("Content-Length: 9999999999\r\n\r\n"))
	f.Add([]byte("Content-Length: 8388609\r\n\r\n"))
	f.Add([]byte(": \r\n\r\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		src := bytes.NewReader(stream)
		r := newReader(src)
		for reads := 0; ; reads++ {
			if reads > len(stream)+1 {
				t.Fatalf("%d reads from %d bytes: the reader does not advance", reads, len(stream))
			}
			m, err := r.read()
			var bad *BadMessageError
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.As(err, &bad):
				if bad.Code != codeParseError && bad.Code != codeInvalidRequest {
					t.Fatalf("refusal with code %d: %v", bad.Code, err)
				}
				continue
			case err != nil:
				if !errors.Is(err, errFraming) {
					t.Fatalf("error that is neither a refusal nor a framing error: %v", err)
				}
				return
			}
			if m.Method == "" && len(m.ID) == 0 {
				t.Fatalf("accepted a message with neither method nor id: %+v", m)
			}
			var buf bytes.Buffer
			if err := (&writer{w: &buf}).write(m); err != nil {
				continue // a value json.Marshal refuses (invalid raw JSON cannot be, it was parsed)
			}
			back, err := newReader(&buf).read()
			if err != nil || back.Method != m.Method || !bytes.Equal(compact(back.ID), compact(m.ID)) {
				t.Fatalf("round trip: %+v -> %+v, %v", m, back, err)
			}
		}
	})
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
