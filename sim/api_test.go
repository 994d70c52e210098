package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
)

var (
	codePattern    = regexp.MustCompile(`^[A-Za-z0-9]{7}$`)
	created2026    = time.Date(2026, 10, 10, 18, 2, 41, 553123456, time.UTC)
	createdInJSON  = `"created":"2026-10-10T18:02:41.553Z"`
	defaultTotals  = `"totalDetails":{"shippingAmount":0.00,"discountAmount":0.00,"surchargeAmount":0.00}`
	defaultStoreJS = `"store":{"name":"Tienda Demo","countryCode":"SV","currencyCode":"USD","currencySymbol":"$","locale":"es-SV","timezone":"America/El_Salvador"}`
)

func readCheckout(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "checkout", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type wantItem struct {
	productID, sku, name, price string
	quantity                    int
	subTotal                    string
}

func TestCheckoutThenGetOrder(t *testing.T) {
	tests := []struct {
		file        string
		wantName    string
		wantItems   []wantItem
		wantSub     string
		wantTotal   string
		wantExpiry  time.Duration
		wantRawPart []string
	}{
		{
			file:     "method1-sku-and-product.json",
			wantName: "Pedido 1042",
			wantItems: []wantItem{
				{"10001", "COMBO-CLASICO", "Combo Clásico", "6.50", 3, "19.50"},
				{"880000", "", "Envío express", "2.10", 1, "2.10"},
				{"10002", "PUPUSA-REVUELTA", "Pupusa Revuelta", "0.75", 7, "5.25"},
			},
			wantSub:    "26.85",
			wantTotal:  "26.85",
			wantExpiry: time.Hour,
			wantRawPart: []string{
				`"metadata":[{"name":"numero_orden","value":"A-1042"},{"name":"canal","value":"whatsapp"}]`,
				`"successUrl":"https://shop.example.test/ok","cancelUrl":"https://shop.example.test/cancel"`,
				`"description":"Almuerzo para la oficina"`,
				`"promoPrice":null`,
			},
		},
		{
			file:       "method2-amount.json",
			wantName:   ordersync.DefaultOrderName,
			wantSub:    "25.5",
			wantTotal:  "25.50",
			wantExpiry: 1440 * time.Minute,
			wantRawPart: []string{
				`"lineItems":[]`, `"metadata":[]`, `"orderReference":""`, `"subtotal":25.5`, `"total":25.50`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			clock := newFakeClock(created2026)
			ts := startSim(t, Config{Clock: clock.Now})
			resp, b := ts.call(t, http.MethodPost, "/paymentlink/checkout", testKey, readCheckout(t, tt.file))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("checkout: HTTP %d %s", resp.StatusCode, b)
			}
			if !regexp.MustCompile(`^\{"orderCode":"[A-Za-z0-9]{7}","orderId":30000,"paymentLinkUrl":"https://pay\.example\.test/[A-Za-z0-9]{7}"\}$`).Match(b) {
				t.Fatalf("checkout body %s: want orderCode, numeric orderId 30000, paymentLinkUrl", b)
			}
			var res ordersync.PaymentLinkResult
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if res.PaymentLinkURL != DefaultLinkBaseURL+"/"+res.OrderCode {
				t.Errorf("paymentLinkUrl %q, want link base + code %q", res.PaymentLinkURL, res.OrderCode)
			}

			o, raw := ts.getOrder(t, res.OrderCode)
			for _, part := range append(tt.wantRawPart, createdInJSON, defaultTotals, defaultStoreJS, `"payment":null`, `"orderStatus":"PENDING"`, `"orderId":30000,`) {
				if !strings.Contains(string(raw), part) {
					t.Errorf("order detail lacks %s:\n%s", part, raw)
				}
			}
			if o.OrderCode != res.OrderCode || o.OrderID != res.OrderID || o.PaymentLinkURL != res.PaymentLinkURL {
				t.Errorf("detail keys %s/%s/%s, want %s/%s/%s", o.OrderCode, o.OrderID, o.PaymentLinkURL, res.OrderCode, res.OrderID, res.PaymentLinkURL)
			}
			if o.Name != tt.wantName {
				t.Errorf("name %q, want %q", o.Name, tt.wantName)
			}
			if len(o.LineItems) != len(tt.wantItems) {
				t.Fatalf("%d line items, want %d", len(o.LineItems), len(tt.wantItems))
			}
			for i, w := range tt.wantItems {
				li := o.LineItems[i]
				if string(li.ProductID) != w.productID || li.SKU != w.sku || li.Name != w.name || li.Price.String() != w.price ||
					li.Quantity != w.quantity || li.SubTotal.String() != w.subTotal || li.PromoPrice != nil {
					t.Errorf("line item %d: %+v, want %+v", i, li, w)
				}
			}
			if o.Subtotal.String() != tt.wantSub || o.Total.String() != tt.wantTotal {
				t.Errorf("subtotal %s total %s, want %s and %s", o.Subtotal, o.Total, tt.wantSub, tt.wantTotal)
			}
			if exp, _ := ts.ExpiresAt(res.OrderCode); !exp.Equal(o.Created.Add(tt.wantExpiry)) {
				t.Errorf("expires at %s, want created + %s", exp, tt.wantExpiry)
			}
			// The Go API and the HTTP API tell the same truth.
			goOrder, ok := ts.Order(res.OrderCode)
			if !ok {
				t.Fatalf("Order(%s) not found", res.OrderCode)
			}
			if enc, _ := json.Marshal(goOrder); string(enc) != string(raw) {
				t.Errorf("Order() encodes to\n%s\nGET answered\n%s", enc, raw)
			}
		})
	}
}

func TestCheckoutValidation(t *testing.T) {
	tests := []struct {
		file       string
		wantFields []string
		// wantMessage is one field's message in Spanish and English.
		field  string
		es, en string
	}{
		{"both-methods.json", []string{"amount", "lineItems"}, "lineItems",
			"Indique lineItems o amount, no ambos ni ninguno.", "Provide either lineItems or amount, not both and not neither."},
		{"neither-method.json", []string{"lineItems"}, "lineItems",
			"Indique lineItems o amount, no ambos ni ninguno.", "Provide either lineItems or amount, not both and not neither."},
		{"unknown-sku.json", []string{"lineItems[1].sku"}, "lineItems[1].sku",
			"El producto con SKU 'NO-EXISTE' no existe.", "The product with SKU 'NO-EXISTE' does not exist."},
		{"bad-items.json", []string{"lineItems[0]", "lineItems[0].quantity", "lineItems[1].product.name", "lineItems[1].product.price"}, "lineItems[0].quantity",
			"La cantidad debe ser al menos 1.", "The quantity must be at least 1."},
		{"bad-amount.json", []string{"amount", "expirationMinutes", "successUrl"}, "amount",
			"El valor debe ser mayor que 0.", "The value must be greater than 0."},
		{"invalid-json.json", []string{"$"}, "$", invalidJSONMessages[ordersync.Spanish], invalidJSONMessages[ordersync.English]},
		{"amount-not-a-number.json", []string{"$"}, "$", invalidJSONMessages[ordersync.Spanish], invalidJSONMessages[ordersync.English]},
		{"trailing-data.json", []string{"$"}, "$", invalidJSONMessages[ordersync.Spanish], invalidJSONMessages[ordersync.English]},
	}
	for _, lang := range []ordersync.Language{ordersync.Spanish, ordersync.English} {
		t.Run(string(lang), func(t *testing.T) {
			ts := startSim(t, Config{Language: lang})
			for _, tt := range tests {
				t.Run(tt.file, func(t *testing.T) {
					resp, b := ts.call(t, http.MethodPost, "/paymentlink/checkout", testKey, readCheckout(t, tt.file))
					if resp.StatusCode != http.StatusBadRequest {
						t.Fatalf("HTTP %d %s, want 400", resp.StatusCode, b)
					}
					if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
						t.Errorf("Content-Type %q", ct)
					}
					p, _ := decodeProblem(t, b)
					if p.Type != ProblemBadRequest || p.Status != 400 || p.Title != validationTitles[lang] {
						t.Errorf("problem %+v", p)
					}
					got := slices.Sorted(func(yield func(string) bool) {
						for k := range p.Errors {
							if !yield(k) {
								return
							}
						}
					})
					if !slices.Equal(got, tt.wantFields) {
						t.Errorf("fields %v, want %v", got, tt.wantFields)
					}
					want := tt.es
					if lang == ordersync.English {
						want = tt.en
					}
					if !slices.Contains(p.Errors[tt.field], want) {
						t.Errorf("errors[%q] = %q, want %q", tt.field, p.Errors[tt.field], want)
					}
				})
			}
			st := ts.Stats()
			if st.Orders != 0 || st.Checkouts != 0 || st.CheckoutsRejected != int64(len(tests)) {
				t.Errorf("stats after refused checkouts: orders %d checkouts %d rejected %d", st.Orders, st.Checkouts, st.CheckoutsRejected)
			}
		})
	}
}

func TestCreatePaymentLinkValidationError(t *testing.T) {
	ts := startSim(t, Config{Language: ordersync.English})
	_, err := ts.CreatePaymentLink(ordersync.PaymentLinkParams{LineItems: []ordersync.LineItemParams{{SKU: "GONE", Quantity: 1}}})
	var verr *ordersync.ValidationError
	if !errors.As(err, &verr) || !slices.Equal(verr.FieldNames(), []string{"lineItems[0].sku"}) {
		t.Fatalf("err %v, want a ValidationError on lineItems[0].sku", err)
	}
}

func TestUnauthorized(t *testing.T) {
	ts := startSim(t, Config{})
	res := ts.checkout(t, amountParams("10"))
	endpoints := []struct{ method, path string }{
		{http.MethodPost, "/paymentlink/checkout"},
		{http.MethodGet, "/paymentlink/order/" + res.OrderCode},
	}
	headers := []struct{ name, value string }{
		{"missing", ""},
		{"wrong key", "Bearer sk_test_wrong"},
		{"key without Bearer", testKey},
		{"lower-case scheme", "bearer " + testKey},
		{"key with a suffix", "Bearer " + testKey + "x"},
	}
	for _, e := range endpoints {
		for _, h := range headers {
			t.Run(e.method+" "+h.name, func(t *testing.T) {
				req, _ := http.NewRequest(e.method, ts.url+e.path, strings.NewReader(`{"amount":1}`))
				if h.value != "" {
					req.Header.Set("Authorization", h.value)
				}
				resp, err := ts.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var raw map[string]json.RawMessage
				if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusUnauthorized || string(raw["status"]) != "401" || string(raw["type"]) != `"`+ProblemUnauthorized+`"` || raw["errors"] != nil {
					t.Errorf("HTTP %d %v, want a 401 problem", resp.StatusCode, raw)
				}
			})
		}
	}
	if st := ts.Stats(); st.Orders != 1 || st.Gets != 0 || st.Unauthorized != int64(len(endpoints)*len(headers)) {
		t.Errorf("stats: %d orders, %d gets, %d unauthorized", st.Orders, st.Gets, st.Unauthorized)
	}
}

func TestNotFound(t *testing.T) {
	ts := startSim(t, Config{Language: ordersync.English})
	tests := []struct{ method, path, key string }{
		{http.MethodGet, "/paymentlink/order/zzzzzzz", testKey},
		{http.MethodPost, "/_sim/orders/zzzzzzz/pay", ""},
		{http.MethodPost, "/_sim/orders/zzzzzzz/cancel", ""},
		{http.MethodGet, "/_sim/orders/zzzzzzz", ""},
		{http.MethodGet, "/paymentlink/nothing", testKey},
	}
	for _, tt := range tests {
		resp, b := ts.call(t, tt.method, tt.path, tt.key, nil)
		p, raw := decodeProblem(t, b)
		if resp.StatusCode != http.StatusNotFound || p.Status != 404 || p.Type != ProblemNotFound || p.Title != "The order was not found." || raw["errors"] != nil {
			t.Errorf("%s %s: HTTP %d %s, want a 404 problem", tt.method, tt.path, resp.StatusCode, b)
		}
	}
}

func TestLifeCycle(t *testing.T) {
	tests := []struct {
		name    string
		actions []Action
		// failAt is the index of the action refused with a conflict, or -1.
		failAt int
		want   ordersync.Status
	}{
		{"pay", []Action{ActionPay}, -1, ordersync.StatusPaid},
		{"pay finalize", []Action{ActionPay, ActionFinalize}, -1, ordersync.StatusFinalized},
		{"pay reverse", []Action{ActionPay, ActionReverse}, -1, ordersync.StatusCancelled},
		{"cancel", []Action{ActionCancel}, -1, ordersync.StatusCancelled},
		{"pay twice", []Action{ActionPay, ActionPay}, 1, ordersync.StatusPaid},
		{"cancel a paid order", []Action{ActionPay, ActionCancel}, 1, ordersync.StatusPaid},
		{"pay a cancelled order", []Action{ActionCancel, ActionPay}, 1, ordersync.StatusCancelled},
		{"cancel twice", []Action{ActionCancel, ActionCancel}, 1, ordersync.StatusCancelled},
		{"finalize unpaid", []Action{ActionFinalize}, 0, ordersync.StatusPending},
		{"reverse unpaid", []Action{ActionReverse}, 0, ordersync.StatusPending},
		{"reverse finalized", []Action{ActionPay, ActionFinalize, ActionReverse}, 2, ordersync.StatusFinalized},
		{"finalize reversed", []Action{ActionPay, ActionReverse, ActionFinalize}, 2, ordersync.StatusCancelled},
	}
	buyer := ordersync.Buyer{Name: "José Peña Hernández", Phone: "+50370001234", Email: "jose.pena@example.com"}
	ts := startSim(t, Config{})
	for _, via := range []string{"go", "http"} {
		for _, tt := range tests {
			t.Run(via+"/"+tt.name, func(t *testing.T) {
				code := ts.checkout(t, amountParams("10.00")).OrderCode
				paid := false
				for i, a := range tt.actions {
					var err error
					if via == "go" {
						if a == ActionPay {
							_, err = ts.Pay(code, buyer)
						} else {
							_, err = ts.Apply(code, a, nil)
						}
					} else {
						var body []byte
						if a == ActionPay {
							body, _ = json.Marshal(buyer)
						}
						resp, b := ts.call(t, http.MethodPost, "/_sim/orders/"+code+"/"+string(a), "", body)
						switch resp.StatusCode {
						case http.StatusOK:
						case http.StatusConflict:
							if p, _ := decodeProblem(t, b); p.Type != ProblemConflict || p.Status != 409 || !strings.Contains(p.Detail, string(a)) {
								t.Errorf("409 body %s", b)
							}
							err = &TransitionError{}
						default:
							t.Fatalf("%s: HTTP %d %s", a, resp.StatusCode, b)
						}
					}
					if i == tt.failAt {
						var terr *TransitionError
						if !errors.Is(err, ordersync.ErrConflict) || !errors.As(err, &terr) {
							t.Errorf("%s (action %d): err %v, want a conflict", a, i, err)
						}
					} else if err != nil {
						t.Fatalf("%s (action %d): %v", a, i, err)
					}
					paid = paid || (a == ActionPay && i != tt.failAt)
				}
				o, _ := ts.getOrder(t, code)
				if o.OrderStatus != tt.want {
					t.Errorf("status %s, want %s", o.OrderStatus, tt.want)
				}
				switch {
				case paid && (o.Payment == nil || o.Payment.Buyer == nil || *o.Payment.Buyer != buyer ||
					!regexp.MustCompile(`^\d{6}$`).MatchString(o.Payment.AuthorizationCode) ||
					o.Payment.VoucherURL != DefaultLinkBaseURL+"/voucher/"+code):
					t.Errorf("payment %+v, want an authorization code, a voucher and the buyer", o.Payment)
				case !paid && o.Payment != nil:
					t.Errorf("payment %+v on an unpaid order", o.Payment)
				}
			})
		}
	}
	_, err := ts.Cancel("nope123")
	if !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("Cancel(unknown): %v, want ErrNotFound", err)
	}
}

func TestPayWithoutBuyerUsesDefault(t *testing.T) {
	ts := startSim(t, Config{})
	code := ts.checkout(t, amountParams("1")).OrderCode
	if resp, b := ts.call(t, http.MethodPost, "/_sim/orders/"+code+"/pay", "", []byte(`{"name":`)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("pay with a broken buyer: HTTP %d %s, want 400", resp.StatusCode, b)
	}
	if resp, b := ts.call(t, http.MethodPost, "/_sim/orders/"+code+"/pay", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("pay: HTTP %d %s", resp.StatusCode, b)
	}
	if o, _ := ts.Order(code); o.Payment == nil || *o.Payment.Buyer != DefaultBuyer {
		t.Errorf("payment %+v, want DefaultBuyer", o.Payment)
	}
}

// TestSecondStore: a simulator configured with MadridStore names it in
// each order detail (currency, zone, country), and its buyers, given or
// not, pay with Spanish mobile numbers, as DefaultStore's pay with
// Salvadoran ones.
func TestSecondStore(t *testing.T) {
	for _, tt := range []struct {
		store       ordersync.StoreInfo
		phone, code string
	}{
		{DefaultStore, "+50370000007", "+503"},
		{MadridStore, "+34600000007", "+34"},
	} {
		t.Run(tt.store.CurrencyCode, func(t *testing.T) {
			ts := startSim(t, Config{Store: tt.store})
			codes := []string{ts.checkout(t, amountParams("12.50")).OrderCode, ts.checkout(t, amountParams("3")).OrderCode}
			if got := ts.Buyer(7).Phone; got != tt.phone {
				t.Errorf("Buyer(7).Phone = %q, want %q", got, tt.phone)
			}
			if _, err := ts.Pay(codes[0], ts.Buyer(7)); err != nil {
				t.Fatal(err)
			}
			if resp, b := ts.call(t, http.MethodPost, "/_sim/orders/"+codes[1]+"/pay", "", nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("pay: HTTP %d %s", resp.StatusCode, b)
			}
			for i, code := range codes {
				o, ok := ts.Order(code)
				if !ok {
					t.Fatalf("order %s not found", code)
				}
				if o.Store != tt.store {
					t.Errorf("order %s: store %+v, want %+v", code, o.Store, tt.store)
				}
				if o.Payment == nil || o.Payment.Buyer == nil || !strings.HasPrefix(o.Payment.Buyer.Phone, tt.code) {
					t.Errorf("order %d: payment %+v, want a buyer's phone with %s", i, o.Payment, tt.code)
				}
			}
			if code, ok := CallingCode(tt.store.CountryCode); !ok || code != tt.code {
				t.Errorf("CallingCode(%s) = %q, %v", tt.store.CountryCode, code, ok)
			}
		})
	}
}

func TestLinkExpiry(t *testing.T) {
	clock := newFakeClock(created2026.Truncate(time.Millisecond))
	rcv := newReceiver(t, nil)
	ts := startSim(t, Config{Clock: clock.Now, WebhookURL: rcv.url, WebhookSecret: "s", WebhookConcurrency: 1, SweepInterval: time.Hour})
	five := 5
	short := ts.checkout(t, ordersync.PaymentLinkParams{Amount: ptr(ordersync.MustAmount("3")), ExpirationMinutes: &five}).OrderCode
	long := ts.checkout(t, amountParams("4")).OrderCode // 1440 minutes
	paid := ts.checkout(t, ordersync.PaymentLinkParams{Amount: ptr(ordersync.MustAmount("5")), ExpirationMinutes: &five}).OrderCode
	if _, err := ts.Pay(paid, DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	created := clock.Now().Truncate(time.Millisecond)

	clock.Advance(5 * time.Minute)
	if n := ts.ExpireDue(); n != 0 {
		t.Errorf("ExpireDue at exactly the expiry cancelled %d orders, want 0", n)
	}
	if o, _ := ts.getOrder(t, short); o.OrderStatus != ordersync.StatusPending {
		t.Errorf("at expiry: %s, want PENDING", o.OrderStatus)
	}

	clock.Advance(time.Millisecond)
	// A read expires the order, before any sweep.
	if o, _ := ts.getOrder(t, short); o.OrderStatus != ordersync.StatusCancelled {
		t.Errorf("after expiry: %s, want CANCELLED", o.OrderStatus)
	}
	if _, err := ts.Pay(short, DefaultBuyer); !errors.Is(err, ordersync.ErrConflict) {
		t.Errorf("pay an expired link: %v, want a conflict", err)
	}
	if o, _ := ts.Order(paid); o.OrderStatus != ordersync.StatusPaid {
		t.Errorf("a paid order expired: %s", o.OrderStatus)
	}
	if n := ts.ExpireDue(); n != 0 {
		t.Errorf("ExpireDue cancelled %d more, want 0", n)
	}

	clock.Advance(24 * time.Hour)
	resp, b := ts.call(t, http.MethodPost, "/_sim/expire", "", nil)
	if resp.StatusCode != http.StatusOK || string(b) != `{"expired":1}` {
		t.Errorf("POST /_sim/expire: HTTP %d %s, want {\"expired\":1}", resp.StatusCode, b)
	}
	if o, _ := ts.Order(long); o.OrderStatus != ordersync.StatusCancelled || !o.Created.Equal(created) {
		t.Errorf("long link after a day: %s created %s", o.OrderStatus, o.Created)
	}

	waitIdle(t, ts)
	var types []string
	for _, h := range rcv.hooks() {
		ev, err := ordersync.ParseEvent(h.body)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, string(ev.Type))
	}
	want := []string{"Created", "Created", "Created", "SuccessPayment", "Cancelled", "Cancelled"}
	if !slices.Equal(types, want) {
		t.Errorf("webhooks %v, want %v", types, want)
	}
	if st := ts.Stats(); st.OrdersByStatus[ordersync.StatusCancelled] != 2 || st.OrdersByStatus[ordersync.StatusPaid] != 1 || st.OrdersByStatus[ordersync.StatusPending] != 0 {
		t.Errorf("orders by status %v", st.OrdersByStatus)
	}
}

func TestExpirySweep(t *testing.T) {
	clock := newFakeClock(created2026)
	ts := startSim(t, Config{Clock: clock.Now, SweepInterval: 5 * time.Millisecond})
	one := 1
	code := ts.checkout(t, ordersync.PaymentLinkParams{Amount: ptr(ordersync.MustAmount("3")), ExpirationMinutes: &one}).OrderCode
	clock.Advance(2 * time.Minute)
	testenv.WaitFor(t, 10*time.Second, "the sweep to expire "+code, func() bool {
		return ts.Stats().OrdersByStatus[ordersync.StatusCancelled] == 1
	})
}

func TestOrderCodesUniqueAndSeeded(t *testing.T) {
	codes := func(seed int64) []string {
		s, err := New(Config{SecretKey: testKey, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var out []string
		for range 50 {
			res, err := s.CreatePaymentLink(amountParams("1"))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res.OrderCode)
		}
		return out
	}
	a, b, c := codes(42), codes(42), codes(43)
	if !slices.Equal(a, b) {
		t.Errorf("seed 42 gave different codes: %v / %v", a[:3], b[:3])
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same codes")
	}
	seen := map[string]bool{}
	for _, code := range a {
		if !codePattern.MatchString(code) || seen[code] {
			t.Errorf("code %q malformed or repeated", code)
		}
		seen[code] = true
	}
}

func TestControlAPI(t *testing.T) {
	ts := startSim(t, Config{})
	var codes []string
	for i := range 3 {
		codes = append(codes, ts.checkout(t, amountParams(fmt.Sprintf("%d.25", i+1))).OrderCode)
	}
	for range 2 {
		ts.getOrder(t, codes[1])
	}
	if _, err := ts.Pay(codes[2], DefaultBuyer); err != nil {
		t.Fatal(err)
	}

	resp, b := ts.call(t, http.MethodGet, "/_sim/orders", "", nil)
	want, _ := json.Marshal(ts.Orders())
	if resp.StatusCode != http.StatusOK || string(b) != string(want) {
		t.Errorf("GET /_sim/orders: HTTP %d\n%s\nwant\n%s", resp.StatusCode, b, want)
	}
	resp, b = ts.call(t, http.MethodGet, "/_sim/orders/"+codes[2], "", nil)
	if o, err := ordersync.DecodeOrder(b); resp.StatusCode != http.StatusOK || err != nil || o.OrderStatus != ordersync.StatusPaid {
		t.Errorf("GET /_sim/orders/{code}: HTTP %d %s", resp.StatusCode, b)
	}

	_, b = ts.call(t, http.MethodGet, "/_sim/stats", "", nil)
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	wantGets := map[string]int64{codes[0]: 0, codes[1]: 2, codes[2]: 0}
	if st.Gets != 2 || fmt.Sprint(st.GetsByOrder) != fmt.Sprint(wantGets) || st.Checkouts != 3 || st.Orders != 3 ||
		st.OrdersByStatus[ordersync.StatusPending] != 2 || st.OrdersByStatus[ordersync.StatusPaid] != 1 || st.Seed != 1 {
		t.Errorf("stats %+v", st)
	}

	resp, b = ts.call(t, http.MethodPut, "/_sim/faults", "", []byte(`{"serverErrorRate":0.25,"getLatency":"15ms","hangDuration":"2s"}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /_sim/faults: HTTP %d %s", resp.StatusCode, b)
	}
	if f := ts.Faults(); f.ServerErrorRate != 0.25 || f.GetLatency != 15*time.Millisecond || f.HangDuration != 2*time.Second || f.RetryAfter != DefaultRetryAfter {
		t.Errorf("faults after PUT: %+v", f)
	}
	resp, b = ts.call(t, http.MethodPut, "/_sim/faults", "", []byte(`{"dropRate":2}`))
	if p, _ := decodeProblem(t, b); resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.Detail, "DropRate") {
		t.Errorf("PUT bad faults: HTTP %d %s", resp.StatusCode, b)
	}
	resp, b = ts.call(t, http.MethodGet, "/_sim/faults", "", nil)
	var f Faults
	if err := json.Unmarshal(b, &f); resp.StatusCode != http.StatusOK || err != nil || f != ts.Faults() {
		t.Errorf("GET /_sim/faults: HTTP %d %s", resp.StatusCode, b)
	}
}

func TestConfigValidation(t *testing.T) {
	good := func() Config { return Config{SecretKey: testKey} }
	tests := []struct {
		name   string
		modify func(*Config)
		field  string
	}{
		{"no key", func(c *Config) { c.SecretKey = "" }, "SecretKey"},
		{"relative link base", func(c *Config) { c.LinkBaseURL = "pay.example.test" }, "LinkBaseURL"},
		{"bad webhook URL", func(c *Config) { c.WebhookURL = "ftp://x" }, "WebhookURL"},
		{"language", func(c *Config) { c.Language = "fr" }, "Language"},
		{"product without SKU", func(c *Config) { c.Products = []Product{{Name: "x", Price: ordersync.MustAmount("1")}} }, "Products[0].SKU"},
		{"repeated SKU", func(c *Config) {
			c.Products = []Product{{SKU: "A", Name: "a", Price: ordersync.MustAmount("1")}, {SKU: "A", Name: "b", Price: ordersync.MustAmount("2")}}
		}, "Products[1].SKU"},
		{"free product", func(c *Config) { c.Products = []Product{{SKU: "A", Name: "a"}} }, "Products[0].Price"},
		{"attempts", func(c *Config) { c.WebhookMaxAttempts = -1 }, "WebhookMaxAttempts"},
		{"concurrency", func(c *Config) { c.WebhookConcurrency = -2 }, "WebhookConcurrency"},
		{"rate above 1", func(c *Config) { c.Faults.DuplicateRate = 1.5 }, "Faults.DuplicateRate"},
		{"negative rate", func(c *Config) { c.Faults.HangRate = -0.1 }, "Faults.HangRate"},
		{"negative latency", func(c *Config) { c.Faults.GetLatency = -time.Second }, "Faults.GetLatency"},
		{"store zone", func(c *Config) { c.Store = MadridStore; c.Store.Timezone = "Europe/Atlantis" }, "Store.Timezone"},
		{"store currency", func(c *Config) { c.Store = MadridStore; c.Store.CurrencyCode = "EURO" }, "Store.CurrencyCode"},
		{"store country", func(c *Config) { c.Store = MadridStore; c.Store.CountryCode = "XX" }, "Store.CountryCode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good()
			tt.modify(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("New: %v, want an error naming %s", err, tt.field)
			}
		})
	}
	if _, err := New(good()); err != nil {
		t.Errorf("New(good): %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestListenAndServe(t *testing.T) {
	s, err := New(Config{SecretKey: testKey, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, "127.0.0.1:0", func(u string) { ready <- u }) }()
	var u string
	select {
	case u = <-ready:
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	ts := &testSim{Server: s, url: u, client: &http.Client{Timeout: 5 * time.Second}}
	code := ts.checkout(t, amountParams("2")).OrderCode
	ts.getOrder(t, code)
	if err := s.Start(ctx); err == nil {
		t.Errorf("a second Start succeeded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe after cancel: %v", err)
	}
	if _, err := http.Get(u + "/_sim/stats"); err == nil {
		t.Errorf("still serving after ListenAndServe returned")
	}
	if _, err := s.Listen("127.0.0.1:0"); err == nil {
		t.Errorf("Listen after Close succeeded")
	}
}
