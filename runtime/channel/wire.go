package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message is one talk payload read from, or written to, an inbox.
type Message struct {
	Direction Direction
	ID        string
	Sequence  int64
	RunID     string
	CreatedAt int64 // milliseconds since the epoch; informational, never used for ordering
	Text      string
}

// wireMessage is the exact on-disk shape. Field order is the key order
// TypeScript Facets writes, so files from either implementation are
// byte-for-byte alike.
type wireMessage struct {
	Version   int    `json:"version"`
	ID        string `json:"id"`
	Sequence  int64  `json:"sequence"`
	RunID     string `json:"runId"`
	Token     string `json:"token"`
	CreatedAt int64  `json:"createdAt"`
	Message   string `json:"message"`
}

// maxSafeInteger is Number.MAX_SAFE_INTEGER: sequences beyond it would not
// survive a round trip through the JavaScript side.
const maxSafeInteger = 1<<53 - 1

// encodeJSON renders v like JSON.stringify(v, null, 2) plus a newline.
// HTML escaping is off because JavaScript does not escape <, > and &.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// identity is what every payload of a channel must carry.
type identity struct {
	runID string
	token string
}

// fields decodes a JSON object into raw members, rejecting anything that is
// not a single object.
func fields(data []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("parse JSON: %w", err)
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("trailing data after JSON object")
	}
	return m, nil
}

// jsonTerms restates a type error of encoding/json in the file's terms
// ("createdAt" must be an integer, not a string) instead of Go's (cannot
// unmarshal string into Go struct field closureRecord.createdAt of type
// int64); other errors are returned as they are.
func jsonTerms(err error) error {
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) {
		return err
	}
	want := "a " + typ.Type.Kind().String()
	switch typ.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Map, reflect.Struct:
		want = "an object"
	}
	field := typ.Field
	if field == "" {
		return fmt.Errorf("the document must be %s, not %s", want, typ.Value)
	}
	return fmt.Errorf("%q must be %s, not %s", field, want, typ.Value)
}

func stringField(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok {
		return "", fmt.Errorf("missing %q", key)
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%q is not a string", key)
	}
	return s, nil
}

// numberField returns a JSON number member as float64, as JavaScript sees it.
func numberField(m map[string]json.RawMessage, key string) (float64, error) {
	raw, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("missing %q", key)
	}
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, fmt.Errorf("%q is not a number", key)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", key)
	}
	return f, nil
}

func safeIntField(m map[string]json.RawMessage, key string, min int64) (int64, error) {
	f, err := numberField(m, key)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f < float64(min) || f > maxSafeInteger {
		return 0, fmt.Errorf("%q must be an integer between %d and %d", key, min, int64(maxSafeInteger))
	}
	return int64(f), nil
}

func checkIdentity(m map[string]json.RawMessage, want identity) error {
	runID, err := stringField(m, "runId")
	if err != nil {
		return err
	}
	token, err := stringField(m, "token")
	if err != nil {
		return err
	}
	if runID != want.runID {
		return fmt.Errorf("runId %q does not match channel run %q", runID, want.runID)
	}
	if !tokenEqual(token, want.token) {
		return errors.New("capability token does not match the channel")
	}
	return nil
}

// DecodeMessage parses and validates one inbox file against the channel
// identity; any error means the payload must not be delivered.
func decodeMessage(data []byte, d Direction, want identity) (Message, error) {
	m, err := fields(data)
	if err != nil {
		return Message{}, err
	}
	v, err := safeIntField(m, "version", 1)
	if err != nil || v != 1 {
		return Message{}, errors.New("unsupported message version (want 1)")
	}
	if err := checkIdentity(m, want); err != nil {
		return Message{}, err
	}
	id, err := stringField(m, "id")
	if err != nil {
		return Message{}, err
	}
	if id == "" {
		return Message{}, errors.New(`"id" is empty`)
	}
	seq, err := safeIntField(m, "sequence", 1)
	if err != nil {
		return Message{}, err
	}
	created, err := numberField(m, "createdAt")
	if err != nil {
		return Message{}, err
	}
	if math.Abs(created) > maxSafeInteger {
		return Message{}, errors.New(`"createdAt" is out of range`)
	}
	text, err := stringField(m, "message")
	if err != nil {
		return Message{}, err
	}
	return Message{Direction: d, ID: id, Sequence: seq, RunID: want.runID, CreatedAt: int64(created), Text: text}, nil
}

// Receipt identifies one delivered message; it is the identity carried in
// the delivery header and the key of a ReceiptStore.
type Receipt struct {
	Direction Direction `json:"direction"`
	RunID     string    `json:"runId"`
	MessageID string    `json:"messageId"`
}

// Receipt returns the key under which the receiver acknowledges m.
func (m Message) Receipt() Receipt {
	return Receipt{Direction: m.Direction, RunID: m.RunID, MessageID: m.ID}
}

// DeliveryPrefix starts every delivered user message; note the trailing space.
const DeliveryPrefix = "[Facets delivery v1] "

// FormatDeliveryHeader renders the header the receiving Pi parses, byte
// for byte: the prefix, compact JSON {direction, runId, messageId} in that key order,
// and a blank line.
func FormatDeliveryHeader(r Receipt) string {
	var b strings.Builder
	b.WriteString(DeliveryPrefix)
	b.WriteString(`{"direction":`)
	b.WriteString(jsQuote(string(r.Direction)))
	b.WriteString(`,"runId":`)
	b.WriteString(jsQuote(r.RunID))
	b.WriteString(`,"messageId":`)
	b.WriteString(jsQuote(r.MessageID))
	b.WriteString("}\n\n")
	return b.String()
}

// FormatDelivery returns the full user-message text for m: header then content.
func FormatDelivery(m Message) string {
	return FormatDeliveryHeader(m.Receipt()) + m.Text
}

// ParseDeliveryHeader reads the receipt identity from the start of a
// delivered user message and returns it with the content after the blank
// line. Quoted or indented markers and malformed JSON do not count.
func ParseDeliveryHeader(text string) (Receipt, string, error) {
	rest, ok := strings.CutPrefix(text, DeliveryPrefix)
	if !ok {
		return Receipt{}, "", errors.New("no delivery header")
	}
	line, body, _ := strings.Cut(rest, "\n")
	body = strings.TrimPrefix(body, "\n")
	m, err := fields([]byte(line))
	if err != nil {
		return Receipt{}, "", fmt.Errorf("delivery header: %w", err)
	}
	dir, err := stringField(m, "direction")
	if err != nil {
		return Receipt{}, "", fmt.Errorf("delivery header: %w", err)
	}
	d, err := ParseDirection(dir)
	if err != nil {
		return Receipt{}, "", fmt.Errorf("delivery header: %w", err)
	}
	r := Receipt{Direction: d}
	if r.RunID, err = stringField(m, "runId"); err != nil || r.RunID == "" {
		return Receipt{}, "", errors.New("delivery header: runId must be a non-empty string")
	}
	if r.MessageID, err = stringField(m, "messageId"); err != nil || r.MessageID == "" {
		return Receipt{}, "", errors.New("delivery header: messageId must be a non-empty string")
	}
	return r, body, nil
}

// jsQuote quotes s the way JSON.stringify does, which differs from
// encoding/json in not escaping <, >, &, U+2028 and U+2029.
func jsQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == utf8.RuneError:
			// Invalid UTF-8 cannot exist in a JavaScript string; encoding/json
			// makes the same replacement.
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
