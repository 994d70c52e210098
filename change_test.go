package ordersync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

const (
	changeAccount = "shop-1"
	changeCode    = "yY7Mcnd"
)

// detail is a fetched order detail in status, its document told apart from
// others of the same status by version.
func detail(t *testing.T, status Status, version int) *Order {
	t.Helper()
	o, err := DecodeOrder(fmt.Appendf(nil, `{"orderId":31547,"orderCode":%q,"orderStatus":%q,"description":"v%d"}`, changeCode, status, version))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func documentHash(doc []byte) string {
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// checkMessages compares the change's outbox messages with the wanted
// ids, and checks what every message says besides its id: the account, the
// order, the status left and the subject its id calls for.
func checkMessages(t *testing.T, c Change, wantIDs []string) {
	t.Helper()
	var ids []string
	for _, m := range c.Messages {
		ids = append(ids, m.MsgID)
		wantSubject := SubjectPaid
		if m.MsgID != changeAccount+":"+changeCode+":paid" {
			wantSubject = SubjectStatusPrefix + string(c.State.Status)
		}
		if m.Subject != wantSubject {
			t.Errorf("message %s: subject %q, want %q", m.MsgID, m.Subject, wantSubject)
		}
		if m.Account != changeAccount || m.OrderCode != changeCode || m.From != c.From {
			t.Errorf("message %s: account %q, order %q, from %q; want %q, %q, %q", m.MsgID, m.Account, m.OrderCode, m.From, changeAccount, changeCode, c.From)
		}
		if m.ID != 0 || m.Payload != nil || !m.CreatedAt.IsZero() {
			t.Errorf("message %s: the store's fields are set: %+v", m.MsgID, m)
		}
	}
	if !reflect.DeepEqual(ids, wantIDs) {
		t.Errorf("messages %q, want %q", ids, wantIDs)
	}
	if c.Paid != (len(wantIDs) > 0 && wantIDs[len(wantIDs)-1] == changeAccount+":"+changeCode+":paid") {
		t.Errorf("Paid = %v with messages %q", c.Paid, ids)
	}
}

// TestChangeOfFirstSight: an order the mirror never fetched records its
// first status as a transition from "" in every status, numbered 1, and a
// paid one fires the PAID trigger, PAID or FINALIZED alike.
func TestChangeOfFirstSight(t *testing.T) {
	tests := []struct {
		status    Status
		wantIDs   []string
		wantPaid  bool
		wantState MirrorState
	}{
		{StatusPending, []string{"shop-1:yY7Mcnd:status:PENDING:1"}, false, MirrorState{Status: StatusPending, Transitions: 1}},
		{StatusPaid, []string{"shop-1:yY7Mcnd:status:PAID:1", "shop-1:yY7Mcnd:paid"}, true, MirrorState{Status: StatusPaid, PaidFired: true, Transitions: 1}},
		{StatusCancelled, []string{"shop-1:yY7Mcnd:status:CANCELLED:1"}, false, MirrorState{Status: StatusCancelled, Transitions: 1}},
		{StatusFinalized, []string{"shop-1:yY7Mcnd:status:FINALIZED:1", "shop-1:yY7Mcnd:paid"}, true, MirrorState{Status: StatusFinalized, PaidFired: true, Transitions: 1}},
		// A status this version does not know is mirrored and published
		// like any other, and is not paid.
		{"EXPIRED", []string{"shop-1:yY7Mcnd:status:EXPIRED:1"}, false, MirrorState{Status: "EXPIRED", Transitions: 1}},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			next := detail(t, tt.status, 1)
			c, err := ChangeOf(changeAccount, nil, next)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Created || !c.Changed || c.From != "" || c.Paid != tt.wantPaid {
				t.Errorf("Created %v, Changed %v, From %q, Paid %v; want true, true, \"\", %v", c.Created, c.Changed, c.From, c.Paid, tt.wantPaid)
			}
			if want := []StatusTransition{{From: "", To: tt.status}}; !reflect.DeepEqual(c.History, want) {
				t.Errorf("history %v, want %v", c.History, want)
			}
			tt.wantState.DocumentHash = documentHash(next.Raw)
			if c.State != tt.wantState {
				t.Errorf("state %+v, want %+v", c.State, tt.wantState)
			}
			if string(c.Document) != string(next.Raw) {
				t.Errorf("document %s, want the fetched %s", c.Document, next.Raw)
			}
			checkMessages(t, c, tt.wantIDs)
		})
	}
}

// TestChangeOfTransitions covers every pair of the four statuses, from a
// mirror that has recorded three transitions: a changed status is recorded
// and published, forwards or backwards (a reversal); the same status in a
// changed document records nothing; PAID fires only if it never fired,
// whether the order was paid before and reversed since or not.
func TestChangeOfTransitions(t *testing.T) {
	const (
		P = StatusPending
		D = StatusPaid
		C = StatusCancelled
		F = StatusFinalized
	)
	status := func(s Status) string { return "shop-1:yY7Mcnd:status:" + string(s) + ":4" }
	const paid = "shop-1:yY7Mcnd:paid"
	tests := []struct {
		from      Status
		paidFired bool
		to        Status
		history   bool
		wantIDs   []string
	}{
		// Never paid.
		{P, false, P, false, nil},
		{P, false, D, true, []string{status(D), paid}},
		{P, false, C, true, []string{status(C)}},
		{P, false, F, true, []string{status(F), paid}}, // finalized without PAID ever seen
		{C, false, P, true, []string{status(P)}},
		{C, false, D, true, []string{status(D), paid}},
		{C, false, C, false, nil},
		{C, false, F, true, []string{status(F), paid}},
		// Paid, and still in a paid status.
		{D, true, P, true, []string{status(P)}}, // reversal
		{D, true, D, false, nil},
		{D, true, C, true, []string{status(C)}}, // reversal
		{D, true, F, true, []string{status(F)}},
		{F, true, P, true, []string{status(P)}}, // reversal
		{F, true, D, true, []string{status(D)}}, // reversal
		{F, true, C, true, []string{status(C)}}, // reversal
		{F, true, F, false, nil},
		// Paid once, reversed since: PAID never fires again.
		{P, true, P, false, nil},
		{P, true, D, true, []string{status(D)}},
		{P, true, C, true, []string{status(C)}},
		{P, true, F, true, []string{status(F)}},
		{C, true, P, true, []string{status(P)}},
		{C, true, D, true, []string{status(D)}},
		{C, true, C, false, nil},
		{C, true, F, true, []string{status(F)}},
		// Mirrored PAID with the trigger not queued (as by a mirror older
		// than the trigger): the next change of its document fires it,
		// without a transition.
		{D, false, D, false, []string{paid}},
		{F, false, F, false, []string{paid}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s(paid fired %v) to %s", tt.from, tt.paidFired, tt.to), func(t *testing.T) {
			prev := &MirrorState{Status: tt.from, DocumentHash: documentHash(detail(t, tt.from, 1).Raw), PaidFired: tt.paidFired, Transitions: 3}
			next := detail(t, tt.to, 2)
			c, err := ChangeOf(changeAccount, prev, next)
			if err != nil {
				t.Fatal(err)
			}
			if c.Created || !c.Changed || c.From != tt.from {
				t.Errorf("Created %v, Changed %v, From %q; want false, true, %q", c.Created, c.Changed, c.From, tt.from)
			}
			var wantHistory []StatusTransition
			wantState := MirrorState{Status: tt.to, DocumentHash: documentHash(next.Raw), PaidFired: tt.paidFired || tt.to.IsPaidState(), Transitions: 3}
			if tt.history {
				wantHistory = []StatusTransition{{From: tt.from, To: tt.to}}
				wantState.Transitions = 4
			}
			if !reflect.DeepEqual(c.History, wantHistory) {
				t.Errorf("history %v, want %v", c.History, wantHistory)
			}
			if c.State != wantState {
				t.Errorf("state %+v, want %+v", c.State, wantState)
			}
			checkMessages(t, c, tt.wantIDs)
		})
	}
}

// TestChangeOfUnchanged: a document identical to the mirrored one records
// nothing and leaves the state as it was, even one that would fire PAID.
func TestChangeOfUnchanged(t *testing.T) {
	for _, s := range Statuses {
		t.Run(string(s), func(t *testing.T) {
			next := detail(t, s, 1)
			prev := MirrorState{Status: s, DocumentHash: documentHash(next.Raw), Transitions: 2}
			c, err := ChangeOf(changeAccount, &prev, next)
			if err != nil {
				t.Fatal(err)
			}
			if c.Created || c.Changed || c.Paid || c.From != s || c.State != prev || c.History != nil || c.Messages != nil {
				t.Errorf("an unchanged document recorded %+v", c)
			}
		})
	}
}

// TestChangeOfLife follows one order through its documents, each change
// worked out against the state the one before left: transitions are
// numbered in turn, PAID fires once, reversals included.
func TestChangeOfLife(t *testing.T) {
	tests := []struct {
		name  string
		steps []Status
		want  [][]string // message ids, a step each
	}{
		{
			name:  "paid, reversed, paid again, finalized",
			steps: []Status{StatusPending, StatusPending, StatusPaid, StatusCancelled, StatusPaid, StatusPaid, StatusFinalized},
			want: [][]string{
				{"shop-1:yY7Mcnd:status:PENDING:1"},
				nil,
				{"shop-1:yY7Mcnd:status:PAID:2", "shop-1:yY7Mcnd:paid"},
				{"shop-1:yY7Mcnd:status:CANCELLED:3"},
				{"shop-1:yY7Mcnd:status:PAID:4"},
				nil,
				{"shop-1:yY7Mcnd:status:FINALIZED:5"},
			},
		},
		{
			name:  "finalized without PAID ever seen",
			steps: []Status{StatusPending, StatusFinalized, StatusPaid},
			want: [][]string{
				{"shop-1:yY7Mcnd:status:PENDING:1"},
				{"shop-1:yY7Mcnd:status:FINALIZED:2", "shop-1:yY7Mcnd:paid"},
				{"shop-1:yY7Mcnd:status:PAID:3"},
			},
		},
		{
			name:  "cancelled and back",
			steps: []Status{StatusCancelled, StatusPending, StatusCancelled},
			want: [][]string{
				{"shop-1:yY7Mcnd:status:CANCELLED:1"},
				{"shop-1:yY7Mcnd:status:PENDING:2"},
				{"shop-1:yY7Mcnd:status:CANCELLED:3"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev *MirrorState
			for i, s := range tt.steps {
				c, err := ChangeOf(changeAccount, prev, detail(t, s, i))
				if err != nil {
					t.Fatal(err)
				}
				checkMessages(t, c, tt.want[i])
				prev = &c.State
			}
		})
	}
}

// TestChangeOfDocument: the document is the fetched bytes as they came, or
// the encoding of an order built in code, and its hash names it.
func TestChangeOfDocument(t *testing.T) {
	built := &Order{OrderCode: changeCode, OrderStatus: StatusPending}
	c, err := ChangeOf(changeAccount, nil, built)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(built)
	if string(c.Document) != string(want) || c.State.DocumentHash != documentHash(want) {
		t.Errorf("document %s (hash %s), want %s (hash %s)", c.Document, c.State.DocumentHash, want, documentHash(want))
	}
	// The same order fetched with its own bytes is another document.
	fetched := detail(t, StatusPending, 1)
	if c, err = ChangeOf(changeAccount, &c.State, fetched); err != nil {
		t.Fatal(err)
	}
	if !c.Changed || string(c.Document) != string(fetched.Raw) || c.Messages != nil {
		t.Errorf("fetched bytes: changed %v, document %s, messages %v", c.Changed, c.Document, c.Messages)
	}
}

// TestNamespaceSubjects: the change's domain subjects move into a
// deployment's namespace and back, for every message a change can queue.
func TestNamespaceSubjects(t *testing.T) {
	c, err := ChangeOf(changeAccount, nil, detail(t, StatusFinalized, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 2 {
		t.Fatalf("messages %v, want the status change and the PAID trigger", c.Messages)
	}
	tests := []struct {
		ns   Namespace
		want []string
	}{
		{DefaultNamespace, []string{"ordersync.orders.status.FINALIZED", "ordersync.orders.paid"}},
		{"shop", []string{"shop.orders.status.FINALIZED", "shop.orders.paid"}},
		{"eu.shop", []string{"eu.shop.orders.status.FINALIZED", "eu.shop.orders.paid"}},
		// Its subjects begin as the domain's do: still moved only once.
		{"ordersync.orders", []string{"ordersync.orders.orders.status.FINALIZED", "ordersync.orders.orders.paid"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.ns), func(t *testing.T) {
			for i, m := range c.Messages {
				got := tt.ns.Subject(m.Subject)
				if got != tt.want[i] {
					t.Errorf("Subject(%q) = %q, want %q", m.Subject, got, tt.want[i])
				}
				if again := tt.ns.Subject(got); again != got {
					t.Errorf("Subject(%q) = %q: a subject in the namespace moved", got, again)
				}
				if back := tt.ns.DomainSubject(got); back != m.Subject {
					t.Errorf("DomainSubject(%q) = %q, want %q", got, back, m.Subject)
				}
			}
		})
	}
	ns := Namespace("shop")
	for _, s := range []string{"shop.events.default", "other.orders.paid", "ordersync.events.default"} {
		if got := ns.Subject(s); got != s {
			t.Errorf("Subject(%q) = %q, want it as it is", s, got)
		}
	}
	if got := ns.DomainSubject("other.orders.paid"); got != "other.orders.paid" {
		t.Errorf("DomainSubject of another namespace's subject = %q", got)
	}
	if got := ns.OrdersPrefix(); got != "shop.orders." {
		t.Errorf("OrdersPrefix = %q", got)
	}
}

func TestPaidAt(t *testing.T) {
	fetch := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	before, after := fetch.Add(-time.Minute), fetch.Add(time.Minute)
	for _, tc := range []struct {
		name      string
		announced *time.Time
		want      time.Time
	}{
		{"no webhook: the fetch", nil, fetch},
		{"an earlier webhook: its receipt", &before, before},
		{"a webhook after the fetch: the fetch", &after, fetch},
		{"a webhook at the fetch: the fetch", &fetch, fetch},
	} {
		if got := PaidAt(tc.announced, fetch); !got.Equal(tc.want) {
			t.Errorf("%s: PaidAt = %v, want %v", tc.name, got, tc.want)
		}
	}
	for typ, want := range map[EventType]bool{EventSuccessPayment: true, EventFinalized: true, EventCreated: false, EventCancelled: false, EventSuccessReverse: false, EventPaymentError: false} {
		if typ.AnnouncesPayment() != want {
			t.Errorf("%s.AnnouncesPayment() = %v, want %v", typ, !want, want)
		}
	}
}
