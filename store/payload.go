package store

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/ordersync/ordersync"
)

// encodePayload returns exactly the bytes of m.MarshalJSON() (and so of
// json.Marshal(m)): the raw document's top-level fields plus "account" and
// "sync", keys sorted, values compact with <, > and & escaped.
//
// MarshalJSON gets there by decoding the document into a map and encoding
// it again, four passes of encoding/json's scanner that cost more than all
// the SQL of an order. This does one validating pass over the document and
// copies its values as they are when they are already compact and need no
// escaping, as the service's documents are. Anything unusual (escaped,
// non-ASCII or duplicate keys, an invalid document) goes to MarshalJSON, so
// errors and edge cases are its own. TestEncodePayloadMatchesMarshalJSON
// and FuzzEncodePayload hold the two to the same bytes.
func encodePayload(m *ordersync.MirroredOrder) ([]byte, error) {
	if trimmed := bytes.TrimSpace(m.Order.Raw); len(trimmed) > 0 && trimmed[0] != '{' {
		return json.Marshal(m) // MarshalJSON falls back to the typed order
	}
	fields, ok := topLevelFields(m.Order.Raw)
	if !ok {
		return m.MarshalJSON()
	}
	account, err := json.Marshal(m.Account)
	if err != nil {
		return nil, err
	}
	sync, err := json.Marshal(m.Sync)
	if err != nil {
		return nil, err
	}
	fields = slices.DeleteFunc(fields, func(f field) bool { return string(f.key) == "account" || string(f.key) == "sync" })
	fields = append(fields, field{key: []byte("account"), value: account}, field{key: []byte("sync"), value: sync})
	slices.SortFunc(fields, func(a, b field) int { return bytes.Compare(a.key, b.key) })

	size := 2
	for _, f := range fields {
		size += len(f.key) + len(f.value) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, f.key...)
		out = append(out, '"', ':')
		if f.rewrite {
			var compact bytes.Buffer
			if err := json.Compact(&compact, f.value); err != nil {
				return m.MarshalJSON()
			}
			var escaped bytes.Buffer
			json.HTMLEscape(&escaped, compact.Bytes())
			out = append(out, escaped.Bytes()...)
		} else {
			out = append(out, f.value...)
		}
	}
	return append(out, '}'), nil
}

// field is one top-level member of a document. rewrite is set when its
// value holds whitespace between tokens or characters the encoder escapes.
type field struct {
	key     []byte
	value   []byte
	rewrite bool
}

// topLevelFields splits a JSON object into its members, validating the
// whole document. It declines (false) invalid documents and keys that are
// not plain printable ASCII without escapes or characters the encoder
// escapes, and duplicate keys: those take MarshalJSON's path.
func topLevelFields(doc []byte) ([]field, bool) {
	s := scanner{b: doc}
	s.skipSpace()
	if !s.consume('{') {
		return nil, false
	}
	fields := make([]field, 0, 24)
	// Duplicates are looked for among the fields so far, or past
	// linearKeys of them in a map: documents have about twenty.
	const linearKeys = 32
	var seen map[string]bool
	s.skipSpace()
	if s.consume('}') {
		s.skipSpace()
		return fields, s.i == len(s.b)
	}
	for {
		s.skipSpace()
		start := s.i
		if !s.str() {
			return nil, false
		}
		key := doc[start+1 : s.i-1]
		for _, c := range key {
			if c < 0x20 || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
				return nil, false
			}
		}
		if len(fields) == linearKeys {
			seen = make(map[string]bool, 2*linearKeys)
			for _, f := range fields {
				seen[string(f.key)] = true
			}
		}
		if seen != nil {
			if seen[string(key)] {
				return nil, false
			}
			seen[string(key)] = true
		} else if slices.ContainsFunc(fields, func(f field) bool { return bytes.Equal(f.key, key) }) {
			return nil, false
		}
		s.skipSpace()
		if !s.consume(':') {
			return nil, false
		}
		s.skipSpace()
		s.rewrite = false
		start = s.i
		if !s.value() {
			return nil, false
		}
		fields = append(fields, field{key: key, value: doc[start:s.i], rewrite: s.rewrite})
		s.skipSpace()
		if s.consume(',') {
			continue
		}
		if !s.consume('}') {
			return nil, false
		}
		s.skipSpace()
		return fields, s.i == len(s.b)
	}
}

// scanner validates JSON (RFC 8259, as encoding/json accepts it) and notes
// whether a value needs compacting or HTML escaping.
type scanner struct {
	b       []byte
	i       int
	rewrite bool
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			s.rewrite = true
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		s.skipSpace()
		if s.consume('}') {
			return true
		}
		for {
			s.skipSpace()
			if !s.str() {
				return false
			}
			s.skipSpace()
			if !s.consume(':') {
				return false
			}
			s.skipSpace()
			if !s.value() {
				return false
			}
			s.skipSpace()
			if s.consume(',') {
				continue
			}
			return s.consume('}')
		}
	case c == '[':
		s.i++
		s.skipSpace()
		if s.consume(']') {
			return true
		}
		for {
			s.skipSpace()
			if !s.value() {
				return false
			}
			s.skipSpace()
			if s.consume(',') {
				continue
			}
			return s.consume(']')
		}
	case c == '"':
		return s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *scanner) str() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '<' || c == '>' || c == '&' || c == 0xE2: // 0xE2 may start U+2028/U+2029
			s.rewrite = true
		case c == '\\':
			if s.i >= len(s.b) {
				return false
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i : s.i+4] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *scanner) number() bool {
	s.consume('-')
	switch {
	case s.consume('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.consume('.') && s.digits() == 0 {
		return false
	}
	if s.consume('e') || s.consume('E') {
		if !s.consume('+') {
			s.consume('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}
