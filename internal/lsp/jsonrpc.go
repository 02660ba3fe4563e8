package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Limits of the message reader. An editor never sends a header line of
// more than a few dozen bytes; a document is capped by what discovery
// reads (256 KiB) many times over, so a larger message is refused rather
// than buffered.
const (
	maxHeaderLine  = 4096
	maxHeaderLines = 32
	// MaxMessageBytes caps one message body.
	MaxMessageBytes = 8 << 20
)

// message is one JSON-RPC 2.0 request, response or notification. ID is
// absent for a notification; Method is absent for a response.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *responseError  `json:"error,omitempty"`
}

// isNotification reports whether m expects no response.
func (m *message) isNotification() bool { return len(m.ID) == 0 || string(m.ID) == "null" }

type responseError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// JSON-RPC and LSP error codes.
const (
	codeParseError           = -32700
	codeInvalidRequest       = -32600
	codeMethodNotFound       = -32601
	codeInvalidParams        = -32602
	codeServerNotInitialized = -32002
	codeInvalidAfterShutdown = -32600
)

// errFraming is wrapped by reader errors after which the stream cannot be
// resynchronised (a broken header): the server must stop.
var errFraming = errors.New("broken message framing")

// BadMessageError is a message whose frame was intact but whose body was
// refused (too large, not JSON); the reader is positioned at the next
// message, so the server answers with an error and goes on.
type BadMessageError struct {
	Code int
	Err  error
}

func (e *BadMessageError) Error() string { return e.Err.Error() }
func (e *BadMessageError) Unwrap() error { return e.Err }

// reader reads LSP base-protocol frames: headers terminated by an empty
// line, of which Content-Length is required, then that many bytes of JSON.
type reader struct {
	r *bufio.Reader
}

func newReader(r io.Reader) *reader { return &reader{r: bufio.NewReaderSize(r, 64<<10)} }

// read returns the next message. io.EOF means the stream ended cleanly
// between messages; an error wrapping errFraming means it cannot go on; a
// *BadMessageError means this message was skipped.
func (r *reader) read() (*message, error) {
	length := -1
	for n := 0; ; n++ {
		line, err := r.line()
		if err != nil {
			if n == 0 && errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%w: read header: %v", errFraming, err)
		}
		if line == "" {
			if n == 0 {
				continue // tolerate blank lines between messages
			}
			break
		}
		if n >= maxHeaderLines {
			return nil, fmt.Errorf("%w: more than %d header lines", errFraming, maxHeaderLines)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: header line %q has no colon", errFraming, line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			v, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: bad Content-Length %q", errFraming, value)
			}
			length = v
		}
	}
	if length < 0 {
		return nil, fmt.Errorf("%w: no Content-Length header", errFraming)
	}
	if length > MaxMessageBytes {
		// Skip the body so the next message is read from its start.
		if _, err := io.CopyN(io.Discard, r.r, int64(length)); err != nil {
			return nil, fmt.Errorf("%w: skip oversized body: %v", errFraming, err)
		}
		return nil, &BadMessageError{Code: codeInvalidRequest, Err: fmt.Errorf("message of %d bytes exceeds the %d byte limit", length, MaxMessageBytes)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, fmt.Errorf("%w: read body: %v", errFraming, err)
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, &BadMessageError{Code: codeParseError, Err: fmt.Errorf("invalid JSON: %v", err)}
	}
	if m.Method == "" && len(m.ID) == 0 {
		return nil, &BadMessageError{Code: codeInvalidRequest, Err: errors.New("message is neither a request, a notification nor a response")}
	}
	return &m, nil
}

// line reads one header line without its CRLF (or LF), refusing one longer
// than maxHeaderLine.
func (r *reader) line() (string, error) {
	var buf []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxHeaderLine {
			return "", fmt.Errorf("header line longer than %d bytes", maxHeaderLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(buf) > 0 && errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	return string(bytes.TrimRight(buf, "\r\n")), nil
}

// writer writes frames; it is safe for concurrent use, since diagnostics
// are published while requests are answered.
type writer struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *writer) write(m *message) error {
	m.JSONRPC = "2.0"
	body, err := marshal(m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := fmt.Fprintf(w.w, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	if _, err := w.w.Write(body); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	return nil
}

// notify sends a notification.
func (w *writer) notify(method string, params any) error {
	raw, err := marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	return w.write(&message{Method: method, Params: raw})
}

// reply answers the request with id with a result or an error.
func (w *writer) reply(id json.RawMessage, result any, rerr *responseError) error {
	m := &message{ID: id, Error: rerr}
	if rerr == nil {
		raw, err := marshal(result)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		m.Result = raw
	}
	return w.write(m)
}

// marshal is json.Marshal without HTML escaping: messages quote file
// contents, which an editor shows as they are.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
