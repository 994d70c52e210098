package admin_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// The one place of the browser tests' shared data set (officeEnv,
// mirrorOffice): a merchant's three days as the browser tests see them,
// two stores, the default account's USD store in America/El_Salvador and
// madrid's EUR store in Europe/Madrid, each with officePerStore orders
// created from 24 November 12:00 UTC to 27 November 12:00 UTC, paid,
// finalized, cancelled, reversed (after a fetch saw them paid, and before
// any did) and open; the console's clock reads officeNow, so "yesterday"
// is 26 November in either store. Beside them the call order a buyer
// phones about (officeCall), a madrid order of the same amount, dead
// letters of each store, and failed deliveries of the actions' endpoint.
const officePerStore = 300

// officeFormula is the madrid order (MD0199, paid 26 November) whose
// buyer's name is a formula (hostileBuyer).
const officeFormula = 199

var officeNow = time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)

// officeCall is the order of the buyer who says they paid: what they say
// and the order's code.
var officeCall = struct {
	Code, Reference, Email, Phone, Total string
}{"SV-CALL", "INV-7731-ANA", "ana.lopez@example.com", "+50373657811", "12.50"}

// officeStores are the data set's stores by account.
var officeStores = map[string]ordersync.StoreInfo{ordersync.DefaultAccount: sim.DefaultStore, "madrid": sim.MadridStore}

// officeOrder is one order of the data set: its statuses as fetched one
// after another (the first a minute after its creation, each next an hour
// later); a status marked * carries a payment (CANCELLED*: a payment
// reversed before any fetch saw it paid).
type officeOrder struct {
	account, code, ref, statuses, total string
	created                             time.Time
	name, email, phone                  string
}

// officeStatuses cycle over each store's orders: mostly collected, some
// finalized, cancelled unpaid, reversed both ways, and open.
var officeStatuses = []string{"PAID", "PAID", "PAID", "PENDING>PAID", "PENDING>PAID>FINALIZED", "PAID>FINALIZED",
	"PENDING>CANCELLED", "PAID>CANCELLED", "CANCELLED*", "PENDING"}

// officeOrders are the data set's orders.
func officeOrders() []officeOrder {
	var out []officeOrder
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	span := 72 * time.Hour
	for s, account := range []string{ordersync.DefaultAccount, "madrid"} {
		prefix := map[string]string{ordersync.DefaultAccount: "SV", "madrid": "MD"}[account]
		for i := range officePerStore {
			n := s*officePerStore + i
			// Amounts of 5.00 to 204.99, never the call's 12.50.
			cents := 500 + (n*7919)%20000
			if cents == 1250 {
				cents++
			}
			out = append(out, officeOrder{account: account, code: fmt.Sprintf("%s%04d", prefix, i),
				ref: fmt.Sprintf("R-%s-%04d", prefix, i), statuses: officeStatuses[(i+s)%len(officeStatuses)],
				total:   fmt.Sprintf("%d.%02d", cents/100, cents%100),
				created: start.Add(span * time.Duration(i) / officePerStore).Add(time.Duration(s*7) * time.Minute),
				name:    fmt.Sprintf("Buyer %d", n), email: fmt.Sprintf("buyer%d@example.com", n),
				phone: fmt.Sprintf("+%s7%07d", map[string]string{ordersync.DefaultAccount: "503", "madrid": "346"}[account], n)})
		}
	}
	// A buyer whose name a spreadsheet would run as a formula, on an order
	// madrid collected yesterday.
	out[officePerStore+officeFormula].name = hostileBuyer
	yesterday := time.Date(2026, 11, 26, 16, 20, 0, 0, time.UTC)
	return append(out,
		officeOrder{account: ordersync.DefaultAccount, code: officeCall.Code, ref: officeCall.Reference, statuses: "PENDING>PAID",
			total: officeCall.Total, created: yesterday, name: "Ana López", email: officeCall.Email, phone: officeCall.Phone},
		officeOrder{account: "madrid", code: "MD-SAME", ref: "R-MD-SAME", statuses: "PAID",
			total: officeCall.Total, created: yesterday, name: "Lucía Pérez", email: "lucia@example.com", phone: "+34600000001"})
}

// mirrorOffice writes the office data set's orders and dead letters into
// db.
func mirrorOffice(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	orders := officeOrders()
	// Each round applies every order's next status, one transaction a round.
	for step := 0; ; step++ {
		var params []ordersync.ApplyParams
		for i, o := range orders {
			statuses := strings.Split(o.statuses, ">")
			if step >= len(statuses) {
				continue
			}
			status := strings.TrimSuffix(statuses[step], "*")
			payment := "null"
			// A payment, once seen, stays on the order, cancelled or not.
			if strings.Contains(strings.Join(statuses[:step+1], ">"), "PAID") || strings.HasSuffix(statuses[step], "*") {
				payment = fmt.Sprintf(`{"authorizationCode":"AUTH%d","buyer":{"name":%q,"email":%q,"phone":%q}}`, i, o.name, o.email, o.phone)
			}
			st := officeStores[o.account]
			doc := fmt.Sprintf(`{"orderId":"%d","orderCode":%q,"orderReference":%q,"name":"Pedido","orderStatus":%q,
"subtotal":%s,"totalDetails":{"shippingAmount":0,"discountAmount":0,"surchargeAmount":0},"total":%s,
"store":{"name":%q,"countryCode":%q,"currencyCode":%q,"timezone":%q},"payment":%s,"created":%q}`,
				9000+i, o.code, o.ref, status, o.total, o.total, st.Name, st.CountryCode, st.CurrencyCode, st.Timezone, payment,
				o.created.Format("2006-01-02T15:04:05.000Z"))
			order, err := ordersync.DecodeOrder([]byte(doc))
			if err != nil {
				t.Fatalf("order %s: %v", o.code, err)
			}
			params = append(params, ordersync.ApplyParams{Account: o.account, Order: order,
				FetchedAt: o.created.Add(time.Minute + time.Duration(step)*time.Hour), Cause: ordersync.CauseTrack})
		}
		if len(params) == 0 {
			break
		}
		first, err := db.AllocateFetchSeq(ctx, len(params))
		if err != nil {
			t.Fatal(err)
		}
		for i := range params {
			params[i].Seq = first + int64(i)
		}
		if _, err := db.ApplyOrders(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	for i, account := range []string{ordersync.DefaultAccount, ordersync.DefaultAccount, "madrid"} {
		if _, err := db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: fmt.Sprintf("office-%d", i), Account: account,
			Reason: ordersync.ReasonRejected, Attempts: 3, LastError: "the service answered 404 for the order",
			Body: []byte(`{"type":"Created"}`), CreatedAt: officeNow.Add(-time.Duration(i+1) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
}

// officeDeliveries name the data set's orders whose order.paid event the
// actions' endpoint failed to take (F0…F4) and took (D0…D2), all paid
// orders of the default store.
var officeDeliveries = map[string]string{"F0": "SV0000", "F1": "SV0001", "F2": "SV0002", "F3": "SV0010", "F4": "SV0011",
	"D0": "SV0020", "D1": "SV0021", "D2": "SV0022"}

// officeEnv is the actions' console (a running dispatcher, one endpoint
// and its counting receiver) over the office data set, its clock at
// officeNow; the endpoint has failed deliveries of the orders
// officeDeliveries names F0…F4 beside delivered ones of D0…D2, and its
// receiver refuses F3 and F4.
func officeEnv(t *testing.T) (*actionsEnv, map[string]int64) {
	t.Helper()
	a, ids := failedEnvWith(t, func(e *apiEnv, c *admin.Config) {
		c.Account, c.Stores = ordersync.DefaultAccount, []string{ordersync.DefaultAccount, "madrid"}
		c.Clock = func() time.Time { return officeNow }
	}, officeDeliveries)
	mirrorOffice(t, a.db)
	return a, ids
}

// officeCollected is the count and sum of account's orders of the data set
// collected (PAID or FINALIZED at the end; with reversed, also those paid
// and reversed since) and first paid on day in the store's zone, as the
// data set's statuses say.
func officeCollected(t *testing.T, account, day string, reversed bool) (int, ordersync.Amount) {
	t.Helper()
	loc, err := time.LoadLocation(officeStores[account].Timezone)
	if err != nil {
		t.Fatal(err)
	}
	n, sum := 0, ordersync.Amount{}
	for _, o := range officeOrders() {
		statuses := strings.Split(o.statuses, ">")
		last := statuses[len(statuses)-1]
		step := slices.IndexFunc(statuses, func(s string) bool { return s == "PAID" || s == "CANCELLED*" })
		if o.account != account || (last != "PAID" && last != "FINALIZED" && !reversed) || step < 0 {
			continue
		}
		if o.created.Add(time.Minute+time.Duration(step)*time.Hour).In(loc).Format("2006-01-02") != day {
			continue
		}
		amount, err := ordersync.ParseAmount(o.total)
		if err != nil {
			t.Fatal(err)
		}
		n, sum = n+1, sum.Add(amount)
	}
	return n, sum
}
