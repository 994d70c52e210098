package ordersync

// The one encoder of a mirrored order: the outbox payload (so every NATS
// order event and HTTP delivery), the admin API and the fakes all get
// their bytes from MarshalJSON.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MarshalJSON writes the order detail in the interface's own field names and
// shape (the raw fetched document when there is one, so fields added upstream
// survive) plus "account" and a "sync" object: the document's top-level
// members with those two added, keys sorted, values compact with <, >, &
// and U+2028/U+2029 escaped, as encoding/json writes a map.
//
// It makes one validating pass over the document and copies its values as
// they are when they are already compact and need no escaping, as the
// service's documents are, instead of decoding the document into a map and
// encoding it again (several times the allocations: docs/testing.md). A
// document that is missing or not a JSON object gives way to the typed
// order. TestMarshalJSONMatchesMap and FuzzMarshalJSON hold the bytes to
// encoding/json's map encoding.
func (m MirroredOrder) MarshalJSON() ([]byte, error) {
	b, _, err := m.marshal()
	return b, err
}

// EncodeEvent is MarshalJSON for an order event's payload, with where an
// HTTP delivery's body puts its "statusChange" member: the offset of the
// first member whose name sorts after it, or of the closing brace. The
// offset is 0 unless the payload's "account", "orderCode" and
// "orderStatus" are exactly m's (as the event's headers say them) and it
// holds no "statusChange" of its own, so a dispatcher trusting the
// headers and the offset builds the body that reading the payload would.
func (m MirroredOrder) EncodeEvent() (payload []byte, statusChangeAt int, err error) {
	return m.marshal()
}

// fieldLists holds the member lists marshal splits documents into, which
// point into the document and never outlive the call: one encode per order
// event, each list about 2 KB.
var fieldLists = sync.Pool{New: func() any { return new([]field) }}

func (m MirroredOrder) marshal() ([]byte, int, error) {
	list := fieldLists.Get().(*[]field)
	defer func() {
		clear((*list)[:cap(*list)])
		fieldLists.Put(list)
	}()
	fields, ok := topLevelFields((*list)[:0], m.Order.Raw)
	if !ok {
		typed, err := json.Marshal(m.Order.withLists())
		if err != nil {
			return nil, 0, err
		}
		if fields, ok = topLevelFields((*list)[:0], typed); !ok {
			return nil, 0, fmt.Errorf("encode order %s: the typed order is not a JSON object", m.Order.OrderCode)
		}
	}
	account, err := json.Marshal(m.Account)
	if err != nil {
		return nil, 0, err
	}
	sync, err := json.Marshal(m.Sync)
	if err != nil {
		return nil, 0, err
	}
	fields = slices.DeleteFunc(fields, func(f field) bool { return string(f.key) == "account" || string(f.key) == "sync" })
	fields = append(fields, field{key: []byte("account"), value: account}, field{key: []byte("sync"), value: sync})
	*list = fields
	slices.SortFunc(fields, func(a, b field) int { return bytes.Compare(a.key, b.key) })

	size := 2
	for _, f := range fields {
		size += len(f.key) + len(f.quoted) + len(f.value) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	// split is where "statusChange" goes; -1 once the payload shows the
	// headers would not say what it holds.
	split, facts := 0, 0
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		if split == 0 && string(f.key) >= "statusChange" {
			split = len(out)
		}
		switch string(f.key) {
		case "statusChange":
			split = -1
		case "account":
			facts += matchesString(f, m.Account)
		case "orderCode":
			facts += matchesString(f, m.Order.OrderCode)
		case "orderStatus":
			facts += matchesString(f, string(m.Order.OrderStatus))
		}
		if f.quoted != nil {
			out = append(out, f.quoted...)
		} else {
			out = append(out, '"')
			out = append(out, f.key...)
			out = append(out, '"')
		}
		out = append(out, ':')
		if f.rewrite {
			var compact bytes.Buffer
			if err := json.Compact(&compact, f.value); err != nil {
				return nil, 0, err
			}
			var escaped bytes.Buffer
			json.HTMLEscape(&escaped, compact.Bytes())
			out = append(out, escaped.Bytes()...)
		} else {
			out = append(out, f.value...)
		}
	}
	if split == 0 {
		split = len(out)
	}
	if split < 0 || facts != 3 {
		split = 0
	}
	return append(out, '}'), split, nil
}

// matchesString is 1 when f's value is s written as a plain JSON string
// (no escapes), as a reader decoding the member would find it.
func matchesString(f field, s string) int {
	v := f.value
	if f.rewrite || len(v) != len(s)+2 || v[0] != '"' || string(v[1:len(v)-1]) != s || strings.ContainsAny(s, "\\\"") {
		return 0
	}
	return 1
}

// field is one top-level member of a document. key is its name decoded;
// quoted, when set, is the name as the encoder writes it (for a name that
// is not plain ASCII without escapes); rewrite is set when the value holds
// whitespace between tokens or characters the encoder escapes.
type field struct {
	key     []byte
	quoted  []byte
	value   []byte
	rewrite bool
}

// topLevelFields splits a JSON object into its members, appended to
// fields (empty), validating the whole document; false for anything else.
// A name repeated keeps its last value, as decoding into a map does.
func topLevelFields(fields []field, doc []byte) ([]field, bool) {
	s := scanner{b: doc}
	s.skipSpace()
	if !s.consume('{') {
		return nil, false
	}
	if fields == nil {
		fields = make([]field, 0, 24)
	}
	// Duplicates are looked for among the fields so far, or past
	// linearKeys of them in a map: documents have about twenty.
	const linearKeys = 32
	var seen map[string]int
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
		f := field{key: doc[start+1 : s.i-1]}
		if !plainKey(f.key) {
			var name string
			if json.Unmarshal(doc[start:s.i], &name) != nil {
				return nil, false
			}
			quoted, err := json.Marshal(name)
			if err != nil {
				return nil, false
			}
			f.key, f.quoted = []byte(name), quoted
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
		f.value, f.rewrite = doc[start:s.i], s.rewrite
		if len(fields) == linearKeys {
			seen = make(map[string]int, 2*linearKeys)
			for i, g := range fields {
				seen[string(g.key)] = i
			}
		}
		dup := -1
		if seen != nil {
			if i, ok := seen[string(f.key)]; ok {
				dup = i
			}
		} else {
			dup = slices.IndexFunc(fields, func(g field) bool { return bytes.Equal(g.key, f.key) })
		}
		if dup >= 0 {
			fields[dup] = f
		} else {
			if seen != nil {
				seen[string(f.key)] = len(fields)
			}
			fields = append(fields, f)
		}
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

// plainKey: a name written as it is, printable ASCII without escapes or
// characters the encoder escapes.
func plainKey(key []byte) bool {
	for _, c := range key {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
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
		return s.list('}', s.member)
	case c == '[':
		return s.list(']', s.value)
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

// list reads an object's members or an array's elements, each with item,
// from its opening character up to close.
func (s *scanner) list(close byte, item func() bool) bool {
	s.i++
	s.skipSpace()
	if s.consume(close) {
		return true
	}
	for {
		s.skipSpace()
		if !item() {
			return false
		}
		s.skipSpace()
		if s.consume(',') {
			continue
		}
		return s.consume(close)
	}
}

// member reads a name, its colon and its value.
func (s *scanner) member() bool {
	if !s.str() {
		return false
	}
	s.skipSpace()
	if !s.consume(':') {
		return false
	}
	s.skipSpace()
	return s.value()
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
