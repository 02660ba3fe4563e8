package channel

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeMessageFast decodes the common inbox file, a flat JSON object of
// strings and plain integers such as both writers produce, without
// encoding/json's reflection (a third of a scan's CPU). It only ever
// answers with the Message decodeMessage would return, or ok=false: any
// other shape (nested values, literals, fractions or exponents, duplicate
// keys, a value decodeMessage would refuse) is left to decodeMessage, so
// every refusal and its wording still comes from there.
func decodeMessageFast(data []byte, d Direction, want identity) (Message, bool) {
	var (
		m                           Message
		version, seq, created       int64
		haveVersion, haveSeq        bool
		haveCreated, haveRun        bool
		haveToken, haveID, haveText bool
	)
	p := skipSpace(data, 0)
	if p >= len(data) || data[p] != '{' {
		return Message{}, false
	}
	p = skipSpace(data, p+1)
	if p < len(data) && data[p] == '}' {
		return Message{}, false // no members: decodeMessage refuses it
	}
	for {
		key, next, ok := scanString(data, p)
		if !ok {
			return Message{}, false
		}
		p = skipSpace(data, next)
		if p >= len(data) || data[p] != ':' {
			return Message{}, false
		}
		p = skipSpace(data, p+1)
		if p >= len(data) {
			return Message{}, false
		}
		var dup bool
		if data[p] == '"' {
			val, next, ok := scanString(data, p)
			if !ok {
				return Message{}, false
			}
			p = next
			switch key {
			case "runId":
				dup, haveRun = haveRun, true
				if val != want.runID {
					return Message{}, false
				}
			case "token":
				dup, haveToken = haveToken, true
				if !tokenEqual(val, want.token) {
					return Message{}, false
				}
			case "id":
				dup, haveID = haveID, true
				m.ID = val
			case "message":
				dup, haveText = haveText, true
				m.Text = val
			case "version", "sequence", "createdAt":
				return Message{}, false
			}
		} else {
			n, next, ok := scanInt(data, p)
			if !ok {
				return Message{}, false
			}
			p = next
			switch key {
			case "version":
				dup, haveVersion, version = haveVersion, true, n
			case "sequence":
				dup, haveSeq, seq = haveSeq, true, n
			case "createdAt":
				dup, haveCreated, created = haveCreated, true, n
			case "runId", "token", "id", "message":
				return Message{}, false
			}
		}
		if dup {
			return Message{}, false // the last one wins there; not worth copying
		}
		p = skipSpace(data, p)
		if p >= len(data) {
			return Message{}, false
		}
		if data[p] == '}' {
			p++
			break
		}
		if data[p] != ',' {
			return Message{}, false
		}
		p = skipSpace(data, p+1)
	}
	if skipSpace(data, p) != len(data) {
		return Message{}, false
	}
	if !haveVersion || version != 1 || !haveRun || !haveToken || !haveID || m.ID == "" ||
		!haveSeq || seq < 1 || seq > maxSafeInteger || !haveCreated || created > maxSafeInteger || created < -maxSafeInteger || !haveText {
		return Message{}, false
	}
	m.Direction, m.Sequence, m.RunID, m.CreatedAt = d, seq, want.runID, created
	return m, true
}

func skipSpace(data []byte, p int) int {
	for p < len(data) {
		switch data[p] {
		case ' ', '\t', '\n', '\r':
			p++
		default:
			return p
		}
	}
	return p
}

// scanString reads the JSON string starting at data[p] and returns its
// value and the offset after its closing quote. A string with escapes or
// invalid UTF-8 is decoded by encoding/json, so its value is exactly what
// decodeMessage would see; a raw control character fails.
func scanString(data []byte, p int) (string, int, bool) {
	if p >= len(data) || data[p] != '"' {
		return "", 0, false
	}
	plain := true
	for i := p + 1; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			raw := data[p+1 : i]
			if plain && utf8.Valid(raw) {
				return string(raw), i + 1, true
			}
			var s string
			if json.Unmarshal(data[p:i+1], &s) != nil {
				return "", 0, false
			}
			return s, i + 1, true
		case c == '\\':
			plain = false
			i++ // the escaped character, a quote included
		case c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

// scanInt reads a JSON number that is a plain integer (no fraction or
// exponent, at most 16 digits, so it is exact as a float64 too).
func scanInt(data []byte, p int) (int64, int, bool) {
	neg := false
	if p < len(data) && data[p] == '-' {
		neg = true
		p++
	}
	start := p
	var n int64
	for p < len(data) && data[p] >= '0' && data[p] <= '9' {
		n = n*10 + int64(data[p]-'0')
		p++
	}
	digits := p - start
	if digits == 0 || digits > 16 || (digits > 1 && data[start] == '0') {
		return 0, 0, false
	}
	if p < len(data) {
		switch data[p] {
		case '.', 'e', 'E':
			return 0, 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, p, true
}
