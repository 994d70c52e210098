package sim

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

const testWebhookSecret = "whsec_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg"

// verifySignature checks a signature the way a receiver would, without the
// package's Sign.
func verifySignature(t *testing.T, h hook) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(testWebhookSecret))
	m.Write(h.body)
	got, err := base64.StdEncoding.DecodeString(h.signature)
	if len(h.signature) != 44 || err != nil || !hmac.Equal(got, m.Sum(nil)) {
		t.Errorf("signature %q does not verify for %s", h.signature, h.body)
	}
}

// metadataKeys returns the keys of a flat JSON object in document order.
func metadataKeys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("metadata %s is not an object", obj)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestWebhookBodiesAndSignatures(t *testing.T) {
	clock := newFakeClock(created2026)
	rcv := newReceiver(t, nil)
	ts := startSim(t, Config{Clock: clock.Now, WebhookURL: rcv.url, WebhookSecret: testWebhookSecret, WebhookConcurrency: 1})

	var params ordersync.PaymentLinkParams
	if err := json.Unmarshal(readCheckout(t, "method1-sku-and-product.json"), &params); err != nil {
		t.Fatal(err)
	}
	first := ts.checkout(t, params) // reference ped_7f3c2a91
	buyer := ordersync.Buyer{Name: "José Peña Hernández", Phone: "+50370001234", Email: "jose.pena@example.com"}
	paid, err := ts.Pay(first.OrderCode, buyer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Finalize(first.OrderCode); err != nil {
		t.Fatal(err)
	}
	second := ts.checkout(t, amountParams("9.99")) // no reference
	if _, err := ts.Cancel(second.OrderCode); err != nil {
		t.Fatal(err)
	}
	third := ts.checkout(t, ordersync.PaymentLinkParams{Amount: ptr(ordersync.MustAmount("1")), OrderReference: `ped "3"`})
	if _, err := ts.Pay(third.OrderCode, buyer); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Reverse(third.OrderCode); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ts)

	captured, err := os.ReadFile(filepath.Join("testdata", "webhook-created-captured-shape.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantCreated := bytes.Replace(captured, []byte(`"31547"`), []byte(`"`+string(first.OrderID)+`"`), 1)
	event := func(id ordersync.ID, ref, desc, typ string) string {
		return fmt.Sprintf(`{"orderId":"%s","orderReference":%s,"orderType":"FASTLINK_CHARGE","description":"%s","metadata":null,"level":"Info","type":"%s"}`, id, ref, desc, typ)
	}
	want := []string{
		string(wantCreated),
		"", // SuccessPayment, checked below
		event(first.OrderID, `"ped_7f3c2a91"`, "La orden fue finalizada", "Finalized"),
		event(second.OrderID, `null`, "La orden fue creada", "Created"),
		event(second.OrderID, `null`, "La orden fue cancelada", "Cancelled"),
		event(third.OrderID, `"ped \"3\""`, "La orden fue creada", "Created"),
		"", // SuccessPayment
		event(third.OrderID, `"ped \"3\""`, "La orden fue reversada exitosamente", "SuccessReverse"),
	}
	got := rcv.hooks()
	if len(got) != len(want) {
		t.Fatalf("received %d webhooks, want %d", len(got), len(want))
	}
	for i, h := range got {
		verifySignature(t, h)
		if want[i] != "" && string(h.body) != want[i] {
			t.Errorf("webhook %d:\n got %s\nwant %s", i, h.body, want[i])
		}
		ev, err := ordersync.ParseEvent(h.body)
		if err != nil {
			t.Fatalf("ParseEvent(%s): %v", h.body, err)
		}
		if reason, ignored := ev.Ignored(); ignored || ev.OrderCode != "" || strings.Contains(string(h.body), "orderCode") {
			t.Errorf("webhook %d is ignored (%s) or names an orderCode: %s", i, reason, h.body)
		}
	}

	pay := got[1].body
	prefix := fmt.Sprintf(`{"orderId":"%s","orderReference":"ped_7f3c2a91","orderType":"FASTLINK_CHARGE","description":"La orden fue pagada exitosamente","metadata":{`, first.OrderID)
	suffix := `},"level":"Info","type":"SuccessPayment"}`
	if !bytes.HasPrefix(pay, []byte(prefix)) || !bytes.HasSuffix(pay, []byte(suffix)) {
		t.Fatalf("SuccessPayment body %s", pay)
	}
	md := pay[len(prefix)-1 : len(pay)-len(suffix)+1]
	wantKeys := []string{"PaymentId", "ChargeId", "TransactionDate", "AuthorizationCode", "Status", "BuyerName", "BuyerEmail", "BuyerPhone", "BuyerExternalId", "orderDetail", "numero_orden", "canal"}
	if keys := metadataKeys(t, md); !slices.Equal(keys, wantKeys) {
		t.Errorf("metadata keys %v, want %v", keys, wantKeys)
	}
	var m struct {
		PaymentId, ChargeId, TransactionDate, AuthorizationCode, Status, BuyerName, BuyerEmail, BuyerPhone string
		OrderDetail                                                                                        []struct {
			ItemID   string `json:"itemId"`
			Name     string `json:"name"`
			Quantity int    `json:"quantity"`
			Price    string `json:"price"`
		} `json:"orderDetail"`
		NumeroOrden string `json:"numero_orden"`
	}
	if err := json.Unmarshal(md, &m); err != nil {
		t.Fatal(err)
	}
	if m.AuthorizationCode != paid.Payment.AuthorizationCode || m.BuyerName != buyer.Name || m.BuyerEmail != buyer.Email ||
		m.BuyerPhone != buyer.Phone || m.Status != "Pagada" || m.NumeroOrden != "A-1042" ||
		m.TransactionDate != "2026-10-10T18:02:41.5531234" || !strings.HasPrefix(m.PaymentId, "pay_") || !strings.HasPrefix(m.ChargeId, "ch_") {
		t.Errorf("SuccessPayment metadata %+v", m)
	}
	if len(m.OrderDetail) != 3 || m.OrderDetail[0].ItemID != "10001" || m.OrderDetail[0].Quantity != 3 || m.OrderDetail[0].Price != "6.50" {
		t.Errorf("orderDetail %+v", m.OrderDetail)
	}
	ev, _ := ordersync.ParseEvent(pay)
	if st, _ := ev.Type.ImpliedStatus(); st != ordersync.StatusPaid {
		t.Errorf("parsed SuccessPayment %+v", ev)
	}

	st := ts.Stats().Webhooks
	if st.Events != 8 || st.Queued != 8 || st.Delivered != 8 || st.Pending != 0 || st.FailedAttempts != 0 {
		t.Errorf("webhook stats %+v", st)
	}
}

func TestWebhookUnsignedWithoutSecret(t *testing.T) {
	rcv := newReceiver(t, nil)
	ts := startSim(t, Config{WebhookURL: rcv.url})
	ts.checkout(t, amountParams("1"))
	waitIdle(t, ts)
	if got := rcv.hooks(); len(got) != 1 || got[0].signature != "" {
		t.Errorf("got %d webhooks, signature %q; want one, unsigned", len(got), got[0].signature)
	}
}

func TestWebhookRetriedUntilAccepted(t *testing.T) {
	// 503, 500, a dropped connection, 429, then 204.
	answers := []int{503, 500, 0, 429, 204}
	rcv := newReceiver(t, func(n int) int { return answers[min(n, len(answers))-1] })
	ts := startSim(t, Config{WebhookURL: rcv.url, WebhookSecret: testWebhookSecret, WebhookBackoff: time.Millisecond})
	ts.checkout(t, amountParams("12.00"))
	waitIdle(t, ts)

	attempts := rcv.allAttempts()
	if len(attempts) != len(answers) {
		t.Fatalf("%d attempts, want %d", len(attempts), len(answers))
	}
	for i, a := range attempts {
		if !bytes.Equal(a.body, attempts[0].body) || a.signature != attempts[0].signature {
			t.Errorf("attempt %d sent %s (%s), not the first attempt's body", i+1, a.body, a.signature)
		}
	}
	if len(rcv.hooks()) != 1 {
		t.Errorf("%d accepted, want 1", len(rcv.hooks()))
	}
	st := ts.Stats().Webhooks
	if st.Delivered != 1 || st.FailedAttempts != 4 || st.GivenUp != 0 || st.Pending != 0 {
		t.Errorf("webhook stats %+v", st)
	}
}

func TestWebhookGivenUpAfterMaxAttempts(t *testing.T) {
	rcv := newReceiver(t, func(int) int { return 500 })
	ts := startSim(t, Config{WebhookURL: rcv.url, WebhookMaxAttempts: 3, WebhookBackoff: time.Millisecond})
	ts.checkout(t, amountParams("1"))
	waitIdle(t, ts)
	if n := len(rcv.allAttempts()); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	st := ts.Stats().Webhooks
	if st.GivenUp != 1 || st.FailedAttempts != 3 || st.Delivered != 0 || st.Pending != 0 {
		t.Errorf("webhook stats %+v", st)
	}
}

func TestWebhookBackoff(t *testing.T) {
	s, err := New(Config{SecretKey: testKey, WebhookURL: "http://127.0.0.1:1/", WebhookBackoff: 100 * time.Millisecond, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 200 * time.Millisecond, 400 * time.Millisecond},
		{6, 1600 * time.Millisecond, 3200 * time.Millisecond},
		{7, 2500 * time.Millisecond, 5 * time.Second},
		{30, 2500 * time.Millisecond, 5 * time.Second},
	}
	for _, tt := range tests {
		seen := map[time.Duration]bool{}
		for range 20 {
			d := s.hooks.backoffAfter(tt.attempt)
			if d < tt.min || d >= tt.max {
				t.Errorf("backoff after attempt %d: %s, want in [%s, %s)", tt.attempt, d, tt.min, tt.max)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff after attempt %d has little jitter: %d distinct waits in 20", tt.attempt, len(seen))
		}
	}
}

func TestWaitIdleRespectsContext(t *testing.T) {
	rcv := newReceiver(t, func(int) int { return 503 })
	ts := startSim(t, Config{WebhookURL: rcv.url, WebhookBackoff: time.Hour})
	ts.checkout(t, amountParams("1"))
	ctx, cancel := contextWithTimeout(50 * time.Millisecond)
	defer cancel()
	if err := ts.WaitIdle(ctx); err == nil {
		t.Errorf("WaitIdle returned nil with a delivery pending")
	}
}
