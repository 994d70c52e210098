package delivery

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// WebhookID is the webhook-id of an event at an endpoint: the same for
// every attempt and every replay of the event (eventID, its message id in
// the orders stream), different per endpoint.
func WebhookID(endpointID, eventID string) string {
	sum := sha256.Sum256([]byte(endpointID + "\x00" + eventID))
	return "msg_" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

// appendString appends s as encoding/json writes a string: as it is,
// quoted, when nothing in it is escaped (statuses and event types always),
// else by encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Order is the mirrored order an order event carries (a JSON object), read
// once: what a dispatcher routes and records by, and the members the
// event's body is built from.
type Order struct {
	Account string
	Code    string
	Status  string
	// members are the object's top-level members in the form the store
	// writes: compact, keys sorted, values escaped as encoding/json does.
	members []member
	// payload and split, for an order known from its event's headers
	// (OrderOf): the payload as the store wrote it, and where
	// "statusChange" goes in it; members is then nil.
	payload []byte
	split   int
}

// OrderOf is the order of an event whose publisher said its account, code
// and status and where its body's "statusChange" goes (statusChangeAt, a
// byte offset in payload as the store's encoder gives it): nothing of the
// payload is read but the bytes around that offset. It reports false when
// they are not the start of a member or the closing brace of an object;
// the caller then reads the payload with ParseOrder.
func OrderOf(account, code, status string, payload []byte, statusChangeAt int) (*Order, bool) {
	n, at := len(payload), statusChangeAt
	if n < 2 || at < 1 || at >= n || payload[0] != '{' || payload[n-1] != '}' ||
		(payload[at] != '"' && at != n-1) || (payload[at-1] != ',' && at != 1 && at != n-1) {
		return nil, false
	}
	return &Order{Account: account, Code: code, Status: status, payload: payload, split: at}, true
}

// member is one top-level member: its name, its value as written, and the
// name as written (without quotes) when the encoder escapes it (nil: as
// the name).
type member struct{ key, value, written []byte }

// writtenKey is the member's name as the body writes it.
func (m member) writtenKey() []byte {
	if m.written != nil {
		return m.written
	}
	return m.key
}

// ParseOrder reads an order event's payload. The store's one encoder
// (MirroredOrder.MarshalJSON) writes it compact with its keys sorted, so
// the members are found in one pass and later copied as they are; any
// other object (a hand-written or foreign message) is first brought to
// that form by encoding/json, so the body's bytes do not depend on which
// way the payload came.
func ParseOrder(payload []byte) (*Order, error) {
	members, ok := canonicalMembers(payload)
	if !ok {
		var err error
		if members, err = encodedMembers(payload); err != nil {
			return nil, err
		}
	}
	o := &Order{members: members}
	for _, m := range members {
		switch string(m.key) {
		case "account":
			_ = json.Unmarshal(m.value, &o.Account)
		case "orderCode":
			_ = json.Unmarshal(m.value, &o.Code)
		case "orderStatus":
			_ = json.Unmarshal(m.value, &o.Status)
		}
	}
	return o, nil
}

// OrderEventBody is the body of an order event of type eventType published
// at at: the mirrored order as published (a JSON object), under "data", with
// "statusChange": {"from", "to"} added, "to" being the order's
// "orderStatus" and "from" the status before, null when from is empty.
func OrderEventBody(eventType string, at time.Time, order []byte, from string) ([]byte, error) {
	o, err := ParseOrder(order)
	if err != nil {
		return nil, fmt.Errorf("order event body: %w", err)
	}
	return o.EventBody(eventType, at, from)
}

// EventBody is the body of an order event of o (see OrderEventBody): its
// members copied as they are, with "statusChange" put in its sorted place.
func (o *Order) EventBody(eventType string, at time.Time, from string) ([]byte, error) {
	sc := make([]byte, 0, len(`{"from":null,"to":""}`)+len(from)+len(o.Status)+2)
	sc = append(sc, `{"from":`...)
	if from == "" {
		sc = append(sc, "null"...)
	} else {
		sc = appendString(sc, from)
	}
	sc = append(sc, `,"to":`...)
	sc = append(appendString(sc, o.Status), '}')
	typ := appendString(make([]byte, 0, len(eventType)+2), eventType)
	if o.payload != nil {
		return o.splitBody(typ, at, sc), nil
	}
	size := len(`{"type":,"timestamp":"","data":{"statusChange":}}`) + len(typ) + len(time.RFC3339Nano) + len(sc)
	for _, m := range o.members {
		size += len(m.writtenKey()) + len(m.value) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	out = append(out, `,"timestamp":"`...)
	out = at.UTC().AppendFormat(out, time.RFC3339Nano)
	out = append(out, `","data":{`...)
	placed := false
	put := func(key, value []byte) {
		if out[len(out)-1] != '{' {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		out = append(out, value...)
	}
	for _, m := range o.members {
		if !placed && string(m.key) >= "statusChange" {
			put([]byte("statusChange"), sc)
			placed = true
			if string(m.key) == "statusChange" {
				continue // replaced
			}
		}
		put(m.writtenKey(), m.value)
	}
	if !placed {
		put([]byte("statusChange"), sc)
	}
	return append(out, '}', '}'), nil
}

// splitBody is EventBody of an order from OrderOf: the payload copied in
// two parts with "statusChange" between them.
func (o *Order) splitBody(typ []byte, at time.Time, sc []byte) []byte {
	head, tail := o.payload[:o.split], o.payload[o.split:]
	out := make([]byte, 0, len(`{"type":,"timestamp":"","data":,"statusChange":,}`)+len(typ)+len(time.RFC3339Nano)+len(sc)+len(o.payload))
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	out = append(out, `,"timestamp":"`...)
	out = at.UTC().AppendFormat(out, time.RFC3339Nano)
	out = append(out, `","data":`...)
	out = append(out, head...)
	if c := head[len(head)-1]; c != '{' && c != ',' {
		out = append(out, ',')
	}
	out = append(out, `"statusChange":`...)
	out = append(out, sc...)
	if tail[0] == '"' {
		out = append(out, ',')
	}
	out = append(out, tail...)
	return append(out, '}')
}

// encodedMembers are payload's top-level members as encoding/json writes a
// map of raw values: sorted by name, each name and value escaped as it
// escapes them. The names keep their own bytes for the sorting, so a
// name the encoder escapes (a "&", a line separator) sorts as it does.
func encodedMembers(payload []byte) ([]member, error) {
	var data map[string]json.RawMessage
	if err := json.Unmarshal(payload, &data); err != nil || data == nil {
		return nil, fmt.Errorf("order event: the order is not a JSON object: %v", err)
	}
	members := make([]member, 0, len(data))
	for _, name := range slices.Sorted(maps.Keys(data)) {
		value, err := json.Marshal(data[name])
		if err != nil {
			return nil, fmt.Errorf("order event: member %q: %w", name, err)
		}
		quoted, err := json.Marshal(name)
		if err != nil {
			return nil, fmt.Errorf("order event: member %q: %w", name, err)
		}
		m := member{key: []byte(name), value: value}
		if written := quoted[1 : len(quoted)-1]; !bytes.Equal(written, m.key) {
			m.written = written
		}
		members = append(members, m)
	}
	return members, nil
}

// canonicalMembers splits payload into its top-level members, sorted by
// name, when encoding/json would write them as they are: an object,
// compact, no characters it escapes, names without escapes and each once
// (sorting them is all the map encoding would change). It reports false
// otherwise, and for anything that is not valid JSON.
func canonicalMembers(payload []byte) ([]member, bool) {
	if len(payload) < 2 || payload[0] != '{' || !json.Valid(payload) ||
		bytes.ContainsAny(payload, "<>&") || bytes.Contains(payload, lineSep) || bytes.Contains(payload, paraSep) {
		return nil, false
	}
	members := make([]member, 0, 24)
	sorted := true
	i := 1 // past '{'
	for i < len(payload)-1 {
		// A name without escapes, in UTF-8: written as encoding/json
		// writes it, and sorted by its bytes as it sorts names.
		if payload[i] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(payload[i+1:], '"')
		if end < 0 {
			return nil, false
		}
		key := payload[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return nil, false
		}
		if n := len(members); n > 0 && bytes.Compare(members[n-1].key, key) >= 0 {
			sorted = false
		}
		i += end + 2
		if payload[i] != ':' {
			return nil, false
		}
		i++
		start := i
		if i = valueEnd(payload, i); i < 0 {
			return nil, false
		}
		members = append(members, member{key: key, value: payload[start:i]})
		if payload[i] == ',' {
			i++
		}
	}
	if !sorted {
		// A name given twice is left to the map encoding: the last wins.
		slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		for n := 1; n < len(members); n++ {
			if bytes.Equal(members[n-1].key, members[n].key) {
				return nil, false
			}
		}
	}
	return members, true
}

// valueEnd is where the value starting at i ends, in valid JSON; -1 when
// it holds whitespace between tokens (it is not compact).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			return -1
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

var (
	lineSep = []byte("\u2028")
	paraSep = []byte("\u2029")
)

// PingBody is the body of the test event sent to an endpoint at at.
func PingBody(endpointID string, at time.Time) ([]byte, error) {
	data, err := json.Marshal(map[string]string{"endpoint": endpointID})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Event{Type: EventPing, Timestamp: at.UTC(), Data: data})
}
