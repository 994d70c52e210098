package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

var testNow = time.Date(2026, 10, 10, 18, 30, 0, 0, time.UTC)

func TestMoneyRoundTripExact(t *testing.T) {
	amounts := []string{"6.50", "0.10", "12345678901234567890.123456", "0", "0.000001", "-1.00"}
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		o := orderDoc(t, "money1", 1, ordersync.StatusPending, func(doc map[string]any) {
			doc["subtotal"] = json.Number(amounts[0])
			doc["totalDetails"] = map[string]any{
				"shippingAmount": json.Number(amounts[1]), "discountAmount": json.Number(amounts[4]), "surchargeAmount": json.Number(amounts[5]),
			}
			doc["total"] = json.Number(amounts[2])
			items := doc["lineItems"].([]any)
			items[0].(map[string]any)["price"] = json.Number(amounts[2])
			items[0].(map[string]any)["subTotal"] = json.Number(amounts[3])
		})
		apply(t, db, fetched(o, 1))
		got, err := db.FindOrderByCode(context.Background(), ordersync.DefaultAccount, "money1")
		if err != nil {
			t.Fatal(err)
		}
		checks := []struct {
			name string
			got  ordersync.Amount
			want string
		}{
			{"subtotal", got.Order.Subtotal, amounts[0]},
			{"shipping", got.Order.TotalDetails.ShippingAmount, amounts[1]},
			{"discount", got.Order.TotalDetails.DiscountAmount, amounts[4]},
			{"surcharge", got.Order.TotalDetails.SurchargeAmount, amounts[5]},
			{"total", got.Order.Total, amounts[2]},
			{"item price", got.Order.LineItems[0].Price, amounts[2]},
			{"item subTotal", got.Order.LineItems[0].SubTotal, amounts[3]},
			{"item 2 promoPrice", *got.Order.LineItems[1].PromoPrice, "0.99"},
		}
		for _, c := range checks {
			if c.got.String() != c.want {
				t.Errorf("%s = %s, want exactly %s", c.name, c.got, c.want)
			}
		}
		if got.Order.LineItems[0].PromoPrice != nil {
			t.Errorf("item 1 promoPrice = %v, want nil (null upstream)", got.Order.LineItems[0].PromoPrice)
		}
	})
}

func TestFindOrderByCodeReconstructsOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		o := orderDoc(t, "yY7Mcnd", 22805, ordersync.StatusPaid)
		ev := ordersync.EventRecord{MsgID: "ev-1", ReceivedAt: testNow, Type: ordersync.EventSuccessPayment, OrderType: ordersync.OrderTypePaymentLink, Signature: ordersync.SignatureValid}
		apply(t, db, fetched(o, 7, ev))

		got, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, "yY7Mcnd")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Order.Raw) != string(o.Raw) {
			t.Errorf("Raw = %s, want the fetched document byte for byte", got.Order.Raw)
		}
		// Every column reconstructs what the document said.
		want := *o
		want.Raw = nil
		gotOrder := got.Order
		gotOrder.Raw = nil
		wantJSON, _ := json.Marshal(want)
		gotJSON, _ := json.Marshal(gotOrder)
		if string(wantJSON) != string(gotJSON) {
			t.Errorf("reconstructed order\n got %s\nwant %s", gotJSON, wantJSON)
		}
		wantSync := ordersync.SyncInfo{
			FirstSeenAt: got.Sync.FirstSeenAt, LastSyncedAt: ptr(fetched(o, 7).FetchedAt), LastEventAt: ptr(testNow),
			LastEventType: ordersync.EventSuccessPayment, FetchCount: 1, FetchSeq: 7,
		}
		if !syncEqual(got.Sync, wantSync) || got.Sync.FirstSeenAt.IsZero() {
			t.Errorf("Sync = %s, want %s", jsonString(got.Sync), jsonString(wantSync))
		}
		// MarshalJSON emits the upstream shape, fields added upstream included.
		out, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(out, &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"fieldAddedUpstream", "orderCode", "lineItems", "sync", "account"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("MarshalJSON lacks %q: %s", k, out)
			}
		}
		if string(fields["subtotal"]) != "13.99" || string(fields["account"]) != `"default"` {
			t.Errorf("MarshalJSON subtotal %s account %s", fields["subtotal"], fields["account"])
		}
	})
}

func ptr[T any](v T) *T { return &v }

func syncEqual(a, b ordersync.SyncInfo) bool {
	timeEq := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	return a.FirstSeenAt.Equal(b.FirstSeenAt) && timeEq(a.LastSyncedAt, b.LastSyncedAt) && timeEq(a.LastEventAt, b.LastEventAt) &&
		a.LastEventType == b.LastEventType && a.FetchCount == b.FetchCount && a.FetchSeq == b.FetchSeq
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestApplyOrdersCreatedChangedUnchangedStale(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		pending := orderDoc(t, "c1", 100, ordersync.StatusPending)
		renamed := orderDoc(t, "c1", 100, ordersync.StatusPending, func(doc map[string]any) {
			doc["name"] = "Pedido renombrado"
			doc["lineItems"] = doc["lineItems"].([]any)[:1]
			doc["metadata"] = []any{map[string]any{"name": "canal", "value": "web"}}
		})
		steps := []struct {
			name     string
			params   ordersync.ApplyParams
			want     ordersync.ApplyResult
			wantName string
			wantSeq  int64
			count    int64
			items    int
			history  int
		}{
			{"created", fetched(pending, 10), ordersync.ApplyResult{Applied: true, Created: true, Changed: true, Status: "PENDING"}, "Pedido A-1042", 10, 1, 2, 1},
			{"unchanged", fetched(pending, 11), ordersync.ApplyResult{Applied: true, From: "PENDING", Status: "PENDING"}, "Pedido A-1042", 11, 2, 2, 1},
			{"changed", fetched(renamed, 12), ordersync.ApplyResult{Applied: true, Changed: true, From: "PENDING", Status: "PENDING"}, "Pedido renombrado", 12, 3, 1, 1},
			{"stale lower seq", fetched(pending, 9), ordersync.ApplyResult{From: "PENDING", Status: "PENDING"}, "Pedido renombrado", 12, 3, 1, 1},
			{"stale equal seq", fetched(pending, 12), ordersync.ApplyResult{From: "PENDING", Status: "PENDING"}, "Pedido renombrado", 12, 3, 1, 1},
		}
		for _, s := range steps {
			res := apply(t, db, s.params)
			res[0].NextCheck, res[0].Messages = time.Time{}, nil // storetest checks them
			if !reflect.DeepEqual(res[0], s.want) {
				t.Errorf("%s: result %+v, want %+v", s.name, res[0], s.want)
			}
			got, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, "c1")
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if got.Order.Name != s.wantName || got.Sync.FetchSeq != s.wantSeq || got.Sync.FetchCount != s.count || len(got.Order.LineItems) != s.items {
				t.Errorf("%s: mirror has name %q seq %d fetches %d items %d, want %q %d %d %d",
					s.name, got.Order.Name, got.Sync.FetchSeq, got.Sync.FetchCount, len(got.Order.LineItems), s.wantName, s.wantSeq, s.count, s.items)
			}
			if h := statusHistory(t, db, "c1"); len(h) != s.history {
				t.Errorf("%s: %d status history rows, want %d", s.name, len(h), s.history)
			}
		}
		got, _ := db.FindOrderByCode(ctx, ordersync.DefaultAccount, "c1")
		if len(got.Order.Metadata) != 1 || got.Order.Metadata[0].Value != "web" {
			t.Errorf("metadata not replaced: %+v", got.Order.Metadata)
		}
		if string(got.Order.Raw) != string(renamed.Raw) {
			t.Error("a stale apply overwrote the raw document")
		}
	})
}

func TestApplyOrdersPaidFiresOnce(t *testing.T) {
	tests := []struct {
		name     string
		statuses []ordersync.Status
		// wantMsgs are the outbox msg ids, in order.
		wantMsgs    []string
		wantHistory []string // from>to
		wantPaid    []bool
	}{
		{
			name:     "pending paid finalized",
			statuses: []ordersync.Status{"PENDING", "PAID", "FINALIZED"},
			wantMsgs: []string{
				"default:o1:status:PENDING:1",
				"default:o1:status:PAID:2", "default:o1:paid",
				"default:o1:status:FINALIZED:3",
			},
			wantHistory: []string{">PENDING", "PENDING>PAID", "PAID>FINALIZED"},
			wantPaid:    []bool{false, true, false},
		},
		{
			name:        "pending finalized",
			statuses:    []ordersync.Status{"PENDING", "FINALIZED"},
			wantMsgs:    []string{"default:o1:status:PENDING:1", "default:o1:status:FINALIZED:2", "default:o1:paid"},
			wantHistory: []string{">PENDING", "PENDING>FINALIZED"},
			wantPaid:    []bool{false, true},
		},
		{
			name:        "paid on first sight, seen again",
			statuses:    []ordersync.Status{"PAID", "PAID"},
			wantMsgs:    []string{"default:o1:status:PAID:1", "default:o1:paid"},
			wantHistory: []string{">PAID"},
			wantPaid:    []bool{true, false},
		},
		{
			name:        "cancelled never pays",
			statuses:    []ordersync.Status{"PENDING", "CANCELLED"},
			wantMsgs:    []string{"default:o1:status:PENDING:1", "default:o1:status:CANCELLED:2"},
			wantHistory: []string{">PENDING", "PENDING>CANCELLED"},
			wantPaid:    []bool{false, false},
		},
	}
	eachDialect(t, func(t *testing.T, url string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				db := openDB(t, url)
				// Each case gets a clean slate in the shared database.
				for _, table := range []string{"outbox", "status_history", "order_line_items", "order_metadata", "orders"} {
					if _, err := db.write.Exec("DELETE FROM " + table); err != nil {
						t.Fatal(err)
					}
				}
				for i, st := range tt.statuses {
					res := apply(t, db, fetched(orderDoc(t, "o1", 1, st), int64(i+1)))
					if res[0].Paid != tt.wantPaid[i] {
						t.Errorf("apply %d (%s): Paid = %v, want %v", i, st, res[0].Paid, tt.wantPaid[i])
					}
				}
				msgs := outboxFor(t, db, "o1")
				var ids []string
				for _, m := range msgs {
					ids = append(ids, m.MsgID)
				}
				if !slices.Equal(ids, tt.wantMsgs) {
					t.Errorf("outbox msg ids %q, want %q", ids, tt.wantMsgs)
				}
				for _, m := range msgs {
					wantSubject := ordersync.SubjectPaid
					if m.MsgID != "default:o1:paid" {
						wantSubject = ordersync.SubjectStatusPrefix + string(statusOfMsgID(m.MsgID))
					}
					if m.Subject != wantSubject {
						t.Errorf("msg %s subject %q, want %q", m.MsgID, m.Subject, wantSubject)
					}
					var payload struct {
						OrderCode   string             `json:"orderCode"`
						Account     string             `json:"account"`
						OrderStatus string             `json:"orderStatus"`
						Sync        ordersync.SyncInfo `json:"sync"`
					}
					if err := json.Unmarshal(m.Payload, &payload); err != nil {
						t.Fatalf("payload of %s: %v", m.MsgID, err)
					}
					if payload.OrderCode != "o1" || payload.Account != "default" || payload.Sync.FetchSeq == 0 {
						t.Errorf("payload of %s: %s", m.MsgID, m.Payload)
					}
				}
				var hist []string
				for _, h := range statusHistory(t, db, "o1") {
					hist = append(hist, h.From+">"+h.To)
				}
				if !slices.Equal(hist, tt.wantHistory) {
					t.Errorf("status history %q, want %q", hist, tt.wantHistory)
				}
			})
		}
	})
}

// statusOfMsgID extracts STATUS from "<account>:<code>:status:<STATUS>:<n>".
func statusOfMsgID(id string) ordersync.Status {
	var parts []string
	start := 0
	for i := range len(id) {
		if id[i] == ':' {
			parts = append(parts, id[start:i])
			start = i + 1
		}
	}
	return ordersync.Status(parts[len(parts)-1])
}

func TestApplyOrdersSameOrderTwiceInBatch(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		pending := orderDoc(t, "b1", 1, ordersync.StatusPending)
		paid := orderDoc(t, "b1", 1, ordersync.StatusPaid)
		res := apply(t, db, fetched(pending, 5), fetched(paid, 6), fetched(pending, 4))
		want := []ordersync.ApplyResult{
			{Applied: true, Created: true, Changed: true, Status: "PENDING"},
			{Applied: true, Changed: true, From: "PENDING", Status: "PAID", Paid: true},
			{From: "PAID", Status: "PAID"},
		}
		for i := range res {
			res[i].NextCheck, res[i].Messages = time.Time{}, nil // storetest checks them
		}
		if !reflect.DeepEqual(res, want) {
			t.Errorf("results %+v\nwant %+v", res, want)
		}
		got, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, "b1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Order.OrderStatus != ordersync.StatusPaid || got.Sync.FetchSeq != 6 || got.Sync.FetchCount != 2 || len(got.Order.LineItems) != 2 {
			t.Errorf("mirror: status %s seq %d fetches %d items %d", got.Order.OrderStatus, got.Sync.FetchSeq, got.Sync.FetchCount, len(got.Order.LineItems))
		}
		if n := len(outboxFor(t, db, "b1")); n != 3 {
			t.Errorf("%d outbox messages, want 3 (PENDING, PAID, paid)", n)
		}
	})
}

func TestApplyOrdersConcurrentNeverMovesBackwards(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		dbs := []*DB{openDB(t, url), openDB(t, url)}
		const orders, fetches = 5, 12
		var wg sync.WaitGroup
		errs := make(chan error, orders*fetches)
		for f := range fetches {
			wg.Go(func() {
				db := dbs[f%2]
				var batch []ordersync.ApplyParams
				for i := range orders {
					status := ordersync.StatusPending
					if f%3 == 2 {
						status = ordersync.StatusPaid
					}
					o := orderDoc(t, fmt.Sprintf("cc%d", i), i+1, status, func(doc map[string]any) { doc["description"] = fmt.Sprint("fetch ", f) })
					batch = append(batch, fetched(o, int64(f+1)))
				}
				if f%2 == 1 {
					slices.Reverse(batch)
				}
				if _, err := db.ApplyOrders(ctx, batch); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent ApplyOrders: %v", err)
		}
		for i := range orders {
			code := fmt.Sprintf("cc%d", i)
			got, err := db0(dbs).FindOrderByCode(ctx, ordersync.DefaultAccount, code)
			if err != nil {
				t.Fatal(err)
			}
			if got.Sync.FetchSeq != fetches || got.Order.Description != fmt.Sprint("fetch ", fetches-1) {
				t.Errorf("%s: seq %d description %q, want the last fetch (%d)", code, got.Sync.FetchSeq, got.Order.Description, fetches)
			}
			paid := 0
			for _, m := range outboxFor(t, dbs[0], code) {
				if m.Subject == ordersync.SubjectPaid {
					paid++
				}
			}
			if paid != 1 {
				t.Errorf("%s: %d paid messages, want 1", code, paid)
			}
		}
	})
}

func db0(dbs []*DB) *DB { return dbs[0] }

func TestEventLogDedupeByReceipt(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		received := ordersync.EventRecord{
			MsgID: "m-1", Account: "default", ReceivedAt: testNow, Type: ordersync.EventCreated,
			OrderType: ordersync.OrderTypePaymentLink, OrderID: "31547", OrderReference: "ped_7f3c2a91",
			Signature: ordersync.SignatureValid, Outcome: ordersync.OutcomeIgnored, Detail: "first",
		}
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{received, received}); err != nil {
			t.Fatal(err)
		}
		// The fetch answering it logs the same MsgID, at the receipt time
		// it carries, as synced, with the code.
		later := received
		later.Detail = "fetched"
		apply(t, db, fetched(orderDoc(t, "e1", 31547, ordersync.StatusPending), 1, later))
		other := ordersync.EventRecord{MsgID: "m-2", Account: "default", ReceivedAt: testNow.Add(time.Hour), Type: ordersync.EventUpdated, Outcome: ordersync.OutcomeRejected}
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{other}); err != nil {
			t.Fatal(err)
		}

		events, err := db.ListEvents(ctx, ordersync.EventFilter{Account: "default"})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 2 || events[0].MsgID != "m-2" || events[1].MsgID != "m-1" {
			t.Fatalf("ListEvents = %+v, want m-2 then m-1", events)
		}
		want := received
		want.Outcome, want.OrderCode, want.Detail = ordersync.OutcomeSynced, "e1", "fetched"
		if events[1] != want {
			t.Errorf("event m-1 = %+v\nwant %+v (first receipt kept, outcome and code updated)", events[1], want)
		}
		byCode, err := db.ListEvents(ctx, ordersync.EventFilter{OrderCode: "e1"})
		if err != nil || len(byCode) != 1 {
			t.Errorf("ListEvents by code = %v, %v; want m-1 only", byCode, err)
		}
		byID, err := db.ListEvents(ctx, ordersync.EventFilter{OrderID: "31547", Limit: 1})
		if err != nil || len(byID) != 1 || byID[0].MsgID != "m-1" {
			t.Errorf("ListEvents by id = %v, %v; want m-1 only", byID, err)
		}
		byMsg, err := db.ListEvents(ctx, ordersync.EventFilter{MsgID: "m-2"})
		if err != nil || len(byMsg) != 1 || byMsg[0].MsgID != "m-2" {
			t.Errorf("ListEvents by message id = %v, %v; want m-2 only", byMsg, err)
		}
		if none, err := db.ListEvents(ctx, ordersync.EventFilter{MsgID: "m-3"}); err != nil || len(none) != 0 {
			t.Errorf("ListEvents by an unlogged message id = %v, %v; want none", none, err)
		}
		// The same body received again an hour later, past the queue's
		// deduplication window, is a receipt of its own.
		resent := received
		resent.ReceivedAt = testNow.Add(time.Hour)
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{resent}); err != nil {
			t.Fatal(err)
		}
		if byMsg, err := db.ListEvents(ctx, ordersync.EventFilter{MsgID: "m-1"}); err != nil || len(byMsg) != 2 || !byMsg[0].ReceivedAt.Equal(resent.ReceivedAt) {
			t.Errorf("ListEvents of a body received twice = %v, %v; want both receipts, newest first", byMsg, err)
		}
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{{Account: "default"}}); err == nil {
			t.Error("RecordEvents without MsgID succeeded")
		}
	})
}

func TestResolveOrderCodeAndPlaceholders(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		expires := testNow.Add(24 * time.Hour)
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "default", Code: "p1", ID: "501", ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
		// A later call fills what is missing, never replaces what is there.
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "default", Code: "p1", ID: "999", Reference: "ref-p1"}); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "other", Code: "p1x", ID: "501", Reference: "ref-p1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindOrderByCode(ctx, "default", "p1"); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("FindOrderByCode(placeholder) err = %v, want ErrNotFound: nothing fetched yet", err)
		}
		resolve := []struct {
			ref  ordersync.OrderRef
			want string
		}{
			{ordersync.OrderRef{Account: "default", ID: "501"}, "p1"},
			{ordersync.OrderRef{Account: "default", Reference: "ref-p1"}, "p1"},
			// An event's orderId rules: a reference shared with another
			// order's is no match (p1 is order 501, not 404) ...
			{ordersync.OrderRef{Account: "default", ID: "404", Reference: "ref-p1"}, ""},
			// ... but an order whose id is not known yet is.
			{ordersync.OrderRef{Account: "third", ID: "404", Reference: "ref-p3"}, "p3"},
			{ordersync.OrderRef{Account: "other", ID: "501"}, "p1x"},
			{ordersync.OrderRef{Account: "default", Code: "given"}, "given"},
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "third", Code: "p3", Reference: "ref-p3"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range resolve {
			got, err := db.ResolveOrderCode(ctx, r.ref)
			if r.want == "" {
				if !errors.Is(err, ordersync.ErrNotFound) {
					t.Errorf("ResolveOrderCode(%+v) = %q, %v; want ErrNotFound", r.ref, got, err)
				}
				continue
			}
			if err != nil || got != r.want {
				t.Errorf("ResolveOrderCode(%+v) = %q, %v; want %q", r.ref, got, err, r.want)
			}
		}

		// The first fetch of a placeholder creates the order (Created) and
		// keeps the keys ordersync recorded.
		res := apply(t, db, fetched(orderDoc(t, "p1", 501, ordersync.StatusPending), 3))
		if !res[0].Created || res[0].From != "" {
			t.Errorf("first fetch of a placeholder: %+v, want Created", res[0])
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "default", Code: "p1", ID: "777", Reference: "changed"}); err != nil {
			t.Fatal(err)
		}
		got, err := db.FindOrderByCode(ctx, "default", "p1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Order.OrderID != "501" || got.Order.OrderReference != "ref-p1" || got.Order.OrderStatus != "PENDING" {
			t.Errorf("RecordOrderRef overwrote fetched data: %+v", got.Order)
		}
		refs, err := db.ListReconcileCandidates(ctx, ordersync.ReconcileFilter{Account: "default"})
		if err != nil || len(refs) != 1 || !refs[0].ExpiresAt.Equal(expires) {
			t.Errorf("candidates = %+v, %v; want p1 with its expiry", refs, err)
		}

		// By reference, the most recently created order wins.
		newer := orderDoc(t, "p2", 502, ordersync.StatusPending, func(doc map[string]any) {
			doc["created"] = "2026-10-11T09:00:00.000Z"
		})
		newer.OrderReference = "ref-p1"
		newer.Raw = nil
		apply(t, db, fetched(newer, 4))
		if got, err := db.ResolveOrderCode(ctx, ordersync.OrderRef{Account: "default", Reference: "ref-p1"}); err != nil || got != "p2" {
			t.Errorf("ResolveOrderCode by shared reference = %q, %v; want the newest, p2", got, err)
		}
	})
}

func TestListReconcileCandidatesOrdering(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		now := time.Now().UTC()
		at := func(p ordersync.ApplyParams, fetchedAt time.Time) ordersync.ApplyParams {
			p.FetchedAt = fetchedAt
			return p
		}
		// Fetched orders, first due 1m to 4m20s after their fetch: quiet's first.
		apply(t, db,
			at(fetched(orderDoc(t, "quiet", 1, ordersync.StatusPending), 1), now.Add(-3*time.Hour)),
			at(fetched(orderDoc(t, "busy", 2, ordersync.StatusPaid), 2), now.Add(-5*time.Minute)),
			at(fetched(orderDoc(t, "done", 3, ordersync.StatusFinalized), 3), now),
			at(fetched(orderDoc(t, "gone", 4, ordersync.StatusCancelled), 4), now),
		)
		// Placeholders, due 15s from now (by code when due together).
		refs := []ordersync.OrderRef{
			{Account: "default", Code: "expiring", ExpiresAt: now.Add(5 * time.Second)},
			{Account: "default", Code: "later", ExpiresAt: now.Add(5 * time.Hour)},
			{Account: "elsewhere", Code: "x"},
		}
		for _, r := range refs {
			if err := db.RecordOrderRef(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		codes := func(f ordersync.ReconcileFilter) []string {
			t.Helper()
			got, err := db.ListReconcileCandidates(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var cs []string
			for _, r := range got {
				cs = append(cs, r.Code)
			}
			return cs
		}
		// Most overdue first; final orders (never due) only with All, last.
		tests := []struct {
			name   string
			filter ordersync.ReconcileFilter
			want   []string
		}{
			{"changeable", ordersync.ReconcileFilter{Account: "default"}, []string{"quiet", "busy", "expiring", "later"}},
			{"limit", ordersync.ReconcileFilter{Account: "default", Limit: 2}, []string{"quiet", "busy"}},
			{"all", ordersync.ReconcileFilter{Account: "default", All: true}, []string{"quiet", "busy", "expiring", "later", "done", "gone"}},
			{"since", ordersync.ReconcileFilter{Account: "default", Since: now.Add(-time.Minute)}, []string{"expiring", "later"}},
		}
		for _, tt := range tests {
			if got := codes(tt.filter); !slices.Equal(got, tt.want) {
				t.Errorf("%s: candidates %q, want %q", tt.name, got, tt.want)
			}
		}
	})
}

// TestListReconcileCandidatesByStatus: every order whose status can still
// change is a candidate, including statuses upstream may invent that sort
// before, between and after the final ones; final orders only with All.
func TestListReconcileCandidatesByStatus(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		statuses := []ordersync.Status{"AUTHORIZED", ordersync.StatusCancelled, "EXPIRED", ordersync.StatusFinalized,
			ordersync.StatusPaid, ordersync.StatusPending, "REFUNDED", "ZZZ"}
		var changeable, all []string
		for i, st := range statuses {
			code := "s-" + strings.ToLower(string(st))
			apply(t, db, fetched(orderDoc(t, code, i+1, st), int64(i+1)))
			all = append(all, code)
			if st.CanChange() {
				changeable = append(changeable, code)
			}
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "default", Code: "s-placeholder"}); err != nil {
			t.Fatal(err)
		}
		changeable, all = append(changeable, "s-placeholder"), append(all, "s-placeholder")
		for _, tt := range []struct {
			all  bool
			want []string
		}{{false, changeable}, {true, all}} {
			refs, err := db.ListReconcileCandidates(ctx, ordersync.ReconcileFilter{All: tt.all})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refs {
				got = append(got, r.Code)
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("All=%v: candidates %q, want %q", tt.all, got, tt.want)
			}
		}
	})
}

// TestResolveOrderCodesMatchesOneByOne: resolving a batch of ids gives what
// ResolveOrderCode gives for each, including the newest order of an id two
// orders share, and leaves out ids nobody has; batches past one statement
// and of every padding size agree too.
func TestResolveOrderCodesMatchesOneByOne(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		// The first placeholders are recorded as the service records them;
		// the other 590 are the same rows written in one transaction, not
		// a transaction each.
		var refs [][]any
		now := dbTime(time.Now())
		for i := range 600 {
			ref := ordersync.OrderRef{Account: "default", Code: fmt.Sprintf("r%03d", i), ID: ordersync.ID(fmt.Sprint(1000 + i))}
			if i < 10 {
				if err := db.RecordOrderRef(ctx, ref); err != nil {
					t.Fatal(err)
				}
				continue
			}
			refs = append(refs, []any{ref.Account, ref.Code, string(ref.ID), "", nil, now, now})
		}
		insert := rowsSQL{prefix: "INSERT INTO orders (account, order_code, order_id, order_reference, expires_at, first_seen_at, next_check_at) VALUES ", cols: 7}
		if err := db.inTx(ctx, "record refs", func(tx *sqlx.Tx) error {
			for chunk := range slices.Chunk(refs, 200) {
				if err := db.execRows(ctx, tx, insert, chunk); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "other", Code: "elsewhere", ID: "1001"}); err != nil {
			t.Fatal(err)
		}
		// Two fetched orders share id 7: the one created later wins.
		older := orderDoc(t, "old7", 7, ordersync.StatusPending, func(doc map[string]any) { doc["created"] = "2026-10-09T09:00:00.000Z" })
		newer := orderDoc(t, "new7", 7, ordersync.StatusPending, func(doc map[string]any) { doc["created"] = "2026-10-11T09:00:00.000Z" })
		apply(t, db, fetched(newer, 1), fetched(older, 2))

		oneByOne := map[ordersync.ID]string{}
		for _, n := range []int{1, 3, 100, 513} {
			ids := []ordersync.ID{"7", "404"}
			for i := range n {
				ids = append(ids, ordersync.ID(fmt.Sprint(1000+(i*7)%600)))
			}
			got, err := db.ResolveOrderCodes(ctx, "default", ids)
			if err != nil {
				t.Fatalf("ResolveOrderCodes(%d ids): %v", len(ids), err)
			}
			want := map[ordersync.ID]string{}
			for _, id := range ids {
				code, ok := oneByOne[id]
				if !ok { // each id is resolved alone once, for every batch
					var err error
					code, err = db.ResolveOrderCode(ctx, ordersync.OrderRef{Account: "default", ID: id})
					switch {
					case errors.Is(err, ordersync.ErrNotFound):
						code = ""
					case err != nil:
						t.Fatalf("ResolveOrderCode(%s): %v", id, err)
					}
					oneByOne[id] = code
				}
				if code != "" {
					want[id] = code
				}
			}
			if want["7"] != "new7" || want["1000"] != "r000" || want["404"] != "" {
				t.Fatalf("one by one: 7 -> %q, 1000 -> %q, 404 -> %q; want new7, r000 and nothing", want["7"], want["1000"], want["404"])
			}
			if len(got) != len(want) {
				t.Errorf("%d ids: resolved %d, want %d", len(ids), len(got), len(want))
			}
			for id, code := range want {
				if got[id] != code {
					t.Errorf("%d ids: id %s resolved to %q, want %q", len(ids), id, got[id], code)
				}
			}
		}
	})
}
