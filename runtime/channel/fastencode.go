package channel

import (
	"strconv"
	"unicode/utf8"
)

// encodeMessage renders w exactly as encodeJSON does (JSON.stringify(w,
// null, 2) plus a newline) without encoding/json's reflection, which was a
// tenth of a send's CPU. TestEncodeMessageMatchesEncodeJSON and
// FuzzEncodeMessage hold it to encodeJSON's bytes.
func encodeMessage(w wireMessage) []byte {
	b := make([]byte, 0, 160+len(w.ID)+len(w.RunID)+len(w.Token)+len(w.Message)*11/10)
	b = append(b, "{\n  \"version\": "...)
	b = strconv.AppendInt(b, int64(w.Version), 10)
	b = append(b, ",\n  \"id\": "...)
	b = appendJSONString(b, w.ID)
	b = append(b, ",\n  \"sequence\": "...)
	b = strconv.AppendInt(b, w.Sequence, 10)
	b = append(b, ",\n  \"runId\": "...)
	b = appendJSONString(b, w.RunID)
	b = append(b, ",\n  \"token\": "...)
	b = appendJSONString(b, w.Token)
	b = append(b, ",\n  \"createdAt\": "...)
	b = strconv.AppendInt(b, w.CreatedAt, 10)
	b = append(b, ",\n  \"message\": "...)
	b = appendJSONString(b, w.Message)
	return append(b, "\n}\n"...)
}

// appendJSONString quotes s as encoding/json does with HTML escaping off:
// the short escapes, \u00XX for other control characters, \u2028 and
// \u2029 escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
