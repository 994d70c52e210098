package paymentlink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/paymentlink"
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name      string
		cfg       paymentlink.Config
		wantField string // "" when the config is valid
	}{
		{"valid", paymentlink.Config{BaseURL: "https://api.example.test", SecretKey: "k"}, ""},
		{"valid with path prefix", paymentlink.Config{BaseURL: "http://127.0.0.1:8090/v2/", SecretKey: "k", Timeout: time.Second}, ""},
		{"missing base URL", paymentlink.Config{SecretKey: "k"}, "BaseURL"},
		{"relative base URL", paymentlink.Config{BaseURL: "/paymentlink", SecretKey: "k"}, "BaseURL"},
		{"no scheme", paymentlink.Config{BaseURL: "api.example.test", SecretKey: "k"}, "BaseURL"},
		{"ftp scheme", paymentlink.Config{BaseURL: "ftp://api.example.test", SecretKey: "k"}, "BaseURL"},
		{"query in base URL", paymentlink.Config{BaseURL: "https://api.example.test/?x=1", SecretKey: "k"}, "BaseURL"},
		{"missing secret key", paymentlink.Config{BaseURL: "https://api.example.test"}, "SecretKey"},
		{"secret key with newline", paymentlink.Config{BaseURL: "https://api.example.test", SecretKey: "k\r\nX-Evil: 1"}, "SecretKey"},
		{"negative timeout", paymentlink.Config{BaseURL: "https://api.example.test", SecretKey: "k", Timeout: -time.Second}, "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := paymentlink.New(tt.cfg)
			if tt.wantField == "" {
				if err != nil || c == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted the config")
			}
			if !strings.Contains(err.Error(), "Config."+tt.wantField) {
				t.Errorf("error %q does not name Config.%s", err, tt.wantField)
			}
			if strings.Contains(err.Error(), "X-Evil") {
				t.Errorf("error %q repeats the secret key", err)
			}
		})
	}
}

func TestGetOrderDecodesRecordedBodies(t *testing.T) {
	created := time.Date(2026, 10, 10, 18, 1, 12, 345e6, time.UTC)
	tests := []struct {
		file        string
		wantStatus  ordersync.Status
		wantTotal   string
		wantPrice   string // of the first line item, digits as written
		wantPromo   string // "" when promoPrice is null
		wantPaid    bool   // Payment is set
		wantCreated time.Time
	}{
		{"order-pending.json", ordersync.StatusPending, "14.25", "6.50", "", false, created},
		{"order-paid.json", ordersync.StatusPaid, "14.25", "6.50", "", true, created},
		{"order-payment-empty-object.json", ordersync.StatusPending, "14.25", "6.50", "", false, created},
		{"order-payment-missing.json", ordersync.StatusPending, "14.25", "6.50", "", false, created},
		{"order-id-string.json", ordersync.StatusPending, "14.25", "6.50", "", false, created},
		{"order-totals-strings.json", ordersync.StatusPending, "14.25", "6.50", "", false, created},
		{"order-created-no-millis.json", ordersync.StatusPending, "14.25", "6.50", "", false, created.Truncate(time.Second)},
		{"order-unknown-fields.json", ordersync.StatusPending, "14.25", "6.50", "", false, created},
		{"order-promo-price.json", ordersync.StatusPending, "13.23", "6.50", "5.99", false, created},
		{"order-status-lowercase.json", ordersync.StatusCancelled, "14.25", "6.5", "", false, created},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc := fixture(t, tt.file)
			u := startUpstream(t, reply(t, http.StatusOK, tt.file))
			c := newClient(t, u, paymentlink.Config{})

			o, err := c.GetOrder(context.Background(), "yY7Mcnd")
			if err != nil {
				t.Fatalf("GetOrder: %v", err)
			}
			if o.OrderID != "31547" || o.OrderCode != "yY7Mcnd" || o.OrderReference != "ped_7f3c2a91" {
				t.Errorf("keys = %q %q %q", o.OrderID, o.OrderCode, o.OrderReference)
			}
			if o.OrderStatus != tt.wantStatus {
				t.Errorf("status = %q, want %q", o.OrderStatus, tt.wantStatus)
			}
			if !o.Total.Equal(ordersync.MustAmount(tt.wantTotal)) {
				t.Errorf("total = %s, want %s", o.Total, tt.wantTotal)
			}
			if len(o.LineItems) != 2 {
				t.Fatalf("%d line items, want 2", len(o.LineItems))
			}
			first := o.LineItems[0]
			if first.Price.String() != tt.wantPrice || first.ProductID != "884213" || first.Quantity != 2 {
				t.Errorf("first line = price %s, product %q, quantity %d", first.Price, first.ProductID, first.Quantity)
			}
			if got := first.SubTotal; !got.Equal(first.Price.MulInt(2)) && tt.wantPromo == "" {
				t.Errorf("subTotal %s is not price × 2", got)
			}
			switch {
			case tt.wantPromo == "" && first.PromoPrice != nil:
				t.Errorf("promoPrice = %s, want null", first.PromoPrice)
			case tt.wantPromo != "" && (first.PromoPrice == nil || first.PromoPrice.String() != tt.wantPromo):
				t.Errorf("promoPrice = %v, want %s", first.PromoPrice, tt.wantPromo)
			}
			if (o.Payment != nil) != tt.wantPaid {
				t.Errorf("payment = %+v, want set: %v", o.Payment, tt.wantPaid)
			}
			if tt.wantPaid && (o.Payment.AuthorizationCode != "204981" || o.Payment.Buyer == nil || o.Payment.Buyer.Email == "") {
				t.Errorf("payment = %+v", o.Payment)
			}
			if !o.Created.Equal(tt.wantCreated) {
				t.Errorf("created = %s, want %s", o.Created, tt.wantCreated)
			}
			if !bytes.Equal(o.Raw, doc) {
				t.Errorf("Raw is not the document as served")
			}
			if o.Store.CurrencyCode != "USD" || len(o.Metadata) != 1 || o.Metadata[0].Value != "A-1042" {
				t.Errorf("store %+v, metadata %+v", o.Store, o.Metadata)
			}
		})
	}
}

func TestRequestsCarryKeyHeadersAndEscapedCode(t *testing.T) {
	codes := []string{"yY7Mcnd", "a/b", "a b", "ü?#%", "..x"}
	for _, code := range codes {
		t.Run(code, func(t *testing.T) {
			u := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				// Answer with the code asked for, whatever it is.
				doc, _ := json.Marshal(map[string]any{"orderCode": r.PathValue("code"), "orderStatus": "PENDING"})
				w.Write(doc)
			})
			c := newClient(t, u, paymentlink.Config{UserAgent: "ordersync-test/1"})
			o, err := c.GetOrder(context.Background(), code)
			if err != nil {
				t.Fatalf("GetOrder(%q): %v", code, err)
			}
			if o.OrderCode != code {
				t.Errorf("order code = %q", o.OrderCode)
			}
			req := u.seen()[0]
			if req.Method != http.MethodGet {
				t.Errorf("method = %s", req.Method)
			}
			if want := "/paymentlink/order/" + url.PathEscape(code); req.Path != want {
				t.Errorf("path = %q, want %q", req.Path, want)
			}
			if req.Code != code {
				t.Errorf("server read code %q, want %q", req.Code, code)
			}
			wantHeaders := map[string]string{
				"Authorization": "Bearer " + testKey,
				"Accept":        "application/json",
				"User-Agent":    "ordersync-test/1",
				"Content-Type":  "",
			}
			for k, v := range wantHeaders {
				if got := req.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestBaseURLPathPrefix(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "order-pending.json"))
	c, err := paymentlink.New(paymentlink.Config{BaseURL: u.URL + "/api/v2/", SecretKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetOrder(context.Background(), "yY7Mcnd"); err != nil {
		t.Fatalf("GetOrder: %v", err)
	}
	if got := u.seen()[0].Path; got != "/api/v2/paymentlink/order/yY7Mcnd" {
		t.Errorf("path = %q", got)
	}
}

func TestGetOrderRejectsAnotherOrder(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "order-pending.json"))
	c := newClient(t, u, paymentlink.Config{})
	_, err := c.GetOrder(context.Background(), "OtherCd")
	if kind := ordersync.UpstreamErrorKindOf(err); kind != ordersync.UpstreamProtocol {
		t.Fatalf("err = %v (kind %q), want a protocol error", err, kind)
	}
}

func TestGetOrderRefusesBlankCodeWithoutSending(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "order-pending.json"))
	c := newClient(t, u, paymentlink.Config{})
	for _, code := range []string{"", "   ", ".", ".."} {
		_, err := c.GetOrder(context.Background(), code)
		var ue *ordersync.UpstreamError
		if !errors.As(err, &ue) || ue.Kind != ordersync.UpstreamValidation || ue.Retryable() {
			t.Fatalf("GetOrder(%q) = %v, want a validation error", code, err)
		}
		if got := ue.Validation.FieldNames(); !reflect.DeepEqual(got, []string{"orderCode"}) {
			t.Errorf("fields = %v", got)
		}
	}
	if n := len(u.seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestCreatePaymentLink(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "checkout-200.json"))
	c := newClient(t, u, paymentlink.Config{})
	price := ordersync.MustAmount("6.50")
	exp := 60
	params := ordersync.PaymentLinkParams{
		LineItems: []ordersync.LineItemParams{
			{SKU: "COMBO-01", Quantity: 2},
			{Product: &ordersync.ProductParams{Name: "Refresco", Price: &price}, Quantity: 1},
		},
		OrderReference:    "ped_7f3c2a91",
		SuccessURL:        "https://shop.example.test/gracias",
		Metadata:          []ordersync.MetadataEntry{{Name: "numero_orden", Value: "A-1042"}},
		ExpirationMinutes: &exp,
	}
	res, err := c.CreatePaymentLink(context.Background(), params)
	if err != nil {
		t.Fatalf("CreatePaymentLink: %v", err)
	}
	want := ordersync.PaymentLinkResult{OrderCode: "yY7Mcnd", OrderID: "31547", PaymentLinkURL: "https://pay.example.test/yY7Mcnd"}
	if *res != want {
		t.Errorf("result = %+v, want %+v", *res, want)
	}

	req := u.seen()[0]
	if req.Method != http.MethodPost || req.Path != "/paymentlink/checkout" {
		t.Errorf("request = %s %s", req.Method, req.Path)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + testKey, "Accept": "application/json", "Content-Type": "application/json"} {
		if got := req.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !bytes.Contains(req.Body, []byte(`"price":6.50`)) {
		t.Errorf("body %s does not carry the price digits 6.50", req.Body)
	}
	var sent ordersync.PaymentLinkParams
	if err := json.Unmarshal(req.Body, &sent); err != nil {
		t.Fatalf("body is not the params: %v", err)
	}
	if sent.OrderReference != params.OrderReference || len(sent.LineItems) != 2 || *sent.ExpirationMinutes != 60 ||
		sent.LineItems[0].SKU != "COMBO-01" || !sent.LineItems[1].Product.Price.Identical(price) {
		t.Errorf("server read %+v", sent)
	}
}

func TestCreatePaymentLinkRefusesInvalidParamsWithoutSending(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "checkout-200.json"))
	c := newClient(t, u, paymentlink.Config{})
	zero := ordersync.MustAmount("0")
	_, err := c.CreatePaymentLink(context.Background(), ordersync.PaymentLinkParams{
		Amount:     &zero,
		SuccessURL: "not a url",
	})
	var ue *ordersync.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != ordersync.UpstreamValidation || ue.Retryable() {
		t.Fatalf("err = %v, want a validation error", err)
	}
	var ve *ordersync.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err %v does not wrap a *ValidationError", err)
	}
	if got := ve.FieldNames(); !reflect.DeepEqual(got, []string{"amount", "successUrl"}) {
		t.Errorf("fields = %v", got)
	}
	if ue.Op != "create payment link" {
		t.Errorf("op = %q", ue.Op)
	}
	if n := len(u.seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestCreatePaymentLinkResultWithoutCodeIsProtocolError(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "checkout-200-no-code.json"))
	c := newClient(t, u, paymentlink.Config{})
	amount := ordersync.MustAmount("10.00")
	_, err := c.CreatePaymentLink(context.Background(), ordersync.PaymentLinkParams{Amount: &amount})
	if kind := ordersync.UpstreamErrorKindOf(err); kind != ordersync.UpstreamProtocol {
		t.Fatalf("err = %v (kind %q), want protocol", err, kind)
	}
}

// call runs one of the two operations against c.
type call struct {
	name  string
	op    string
	run   func(context.Context, *paymentlink.Client) error
	valid bool
}

var calls = []call{
	{name: "get", op: "get order yY7Mcnd", run: func(ctx context.Context, c *paymentlink.Client) error {
		_, err := c.GetOrder(ctx, "yY7Mcnd")
		return err
	}},
	{name: "create", op: "create payment link", run: func(ctx context.Context, c *paymentlink.Client) error {
		amount := ordersync.MustAmount("12.00")
		_, err := c.CreatePaymentLink(ctx, ordersync.PaymentLinkParams{Amount: &amount})
		return err
	}},
}

func TestErrorClasses(t *testing.T) {
	httpDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		status     int
		file       string
		header     []string
		kind       ordersync.UpstreamErrorKind
		retryable  bool
		title      string
		problem    string
		fields     map[string][]string // of a validation error
		retryAfter [2]time.Duration    // inclusive range
		inMessage  string
	}{
		{name: "400 English", status: 400, file: "error-400-en.json", kind: ordersync.UpstreamValidation,
			title: "One or more validation errors occurred.", problem: "https://tools.ietf.org/html/rfc7231#section-6.5.1",
			fields: map[string][]string{
				"lineItems[0].quantity": {"The quantity must be at least 1."},
				"successUrl":            {"The value must be an absolute http or https URL."},
			}},
		{name: "400 Spanish, other field case", status: 400, file: "error-400-es.json", kind: ordersync.UpstreamValidation,
			title: "Se produjeron uno o más errores de validación.",
			fields: map[string][]string{
				"lineItems[0].sku": {"El producto no existe.", "Indique sku o product, no ambos ni ninguno."},
				"amount":           {"El valor debe ser mayor que 0."},
			}},
		{name: "400 errors as map of strings", status: 400, file: "error-400-string-map.json", kind: ordersync.UpstreamValidation,
			title: "Bad Request",
			fields: map[string][]string{
				"orderName":        {"The field must be at most 255 characters long."},
				"metadata[0].name": {"The field is required."},
			}},
		{name: "400 without errors", status: 400, file: "error-400-no-errors.json", kind: ordersync.UpstreamValidation,
			title: "The request body is not valid JSON."},
		{name: "400 HTML", status: 400, file: "error-html.html", kind: ordersync.UpstreamValidation,
			inMessage: "502 Bad Gateway"},
		{name: "422 problem", status: 422, file: "error-400-en.json", kind: ordersync.UpstreamValidation,
			title: "One or more validation errors occurred.", fields: map[string][]string{
				"lineItems[0].quantity": {"The quantity must be at least 1."},
				"successUrl":            {"The value must be an absolute http or https URL."},
			}},
		{name: "401", status: 401, file: "error-401.json", kind: ordersync.UpstreamUnauthorized, title: "Unauthorized"},
		{name: "401 empty body", status: 401, kind: ordersync.UpstreamUnauthorized, inMessage: "HTTP 401"},
		{name: "403 HTML", status: 403, file: "error-html.html", kind: ordersync.UpstreamUnauthorized, inMessage: "nginx"},
		{name: "404 problem", status: 404, file: "error-404.json", kind: ordersync.UpstreamNotFound, title: "Not Found"},
		{name: "404 empty body", status: 404, kind: ordersync.UpstreamNotFound},
		{name: "429 seconds", status: 429, file: "error-429.json", header: []string{"Retry-After", "7"},
			kind: ordersync.UpstreamRateLimited, retryable: true, title: "Too Many Requests", retryAfter: [2]time.Duration{7 * time.Second, 7 * time.Second}},
		{name: "429 HTTP-date", status: 429, header: []string{"Retry-After", httpDate},
			kind: ordersync.UpstreamRateLimited, retryable: true, retryAfter: [2]time.Duration{27 * time.Second, 31 * time.Second}},
		{name: "429 no Retry-After", status: 429, file: "error-429.json",
			kind: ordersync.UpstreamRateLimited, retryable: true, retryAfter: [2]time.Duration{time.Second, time.Second}},
		{name: "429 bad Retry-After", status: 429, header: []string{"Retry-After", "soon"},
			kind: ordersync.UpstreamRateLimited, retryable: true, retryAfter: [2]time.Duration{time.Second, time.Second}},
		{name: "429 absurd Retry-After", status: 429, header: []string{"Retry-After", "99999999999"},
			kind: ordersync.UpstreamRateLimited, retryable: true, retryAfter: [2]time.Duration{paymentlink.MaxRetryAfter, paymentlink.MaxRetryAfter}},
		{name: "500 problem", status: 500, file: "error-500.json", kind: ordersync.UpstreamServer, retryable: true,
			title: "An error occurred while processing your request.", problem: "https://tools.ietf.org/html/rfc7231#section-6.6.1"},
		{name: "502 HTML from a proxy", status: 502, file: "error-html.html", kind: ordersync.UpstreamServer, retryable: true,
			inMessage: `HTTP 502 server: text/html body: "502 Bad Gateway 502 Bad Gateway nginx"`},
		{name: "503 with Retry-After", status: 503, file: "error-503.json", header: []string{"Retry-After", "3"},
			kind: ordersync.UpstreamServer, retryable: true, title: "Service Unavailable", retryAfter: [2]time.Duration{3 * time.Second, 3 * time.Second}},
		{name: "504 gateway message", status: 504, file: "error-gateway-message.json", kind: ordersync.UpstreamServer, retryable: true,
			title: "Endpoint request timed out"},
		{name: "302 redirect not followed", status: 302, header: []string{"Location", "https://elsewhere.example.test/"},
			kind: ordersync.UpstreamProtocol, inMessage: "redirected to https://elsewhere.example.test/"},
		{name: "418 unexpected", status: 418, kind: ordersync.UpstreamProtocol, inMessage: "unexpected status 418"},
		{name: "409 unexpected, HTML", status: 409, file: "error-html.html", kind: ordersync.UpstreamProtocol, inMessage: "502 Bad Gateway"},
		{name: "200 not JSON", status: 200, file: "error-html.html", kind: ordersync.UpstreamProtocol},
		{name: "200 null", status: 200, file: "order-null.json", kind: ordersync.UpstreamProtocol},
	}
	for _, tt := range tests {
		for _, cl := range calls {
			t.Run(tt.name+"/"+cl.name, func(t *testing.T) {
				u := startUpstream(t, reply(t, tt.status, tt.file, tt.header...))
				c := newClient(t, u, paymentlink.Config{})
				err := cl.run(context.Background(), c)
				var ue *ordersync.UpstreamError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v (%T), want *UpstreamError", err, err)
				}
				if ue.Kind != tt.kind || ue.Retryable() != tt.retryable {
					t.Errorf("kind %q retryable %v, want %q %v (%v)", ue.Kind, ue.Retryable(), tt.kind, tt.retryable, err)
				}
				if ue.Op != cl.op {
					t.Errorf("op = %q, want %q", ue.Op, cl.op)
				}
				if ue.StatusCode != tt.status {
					t.Errorf("status = %d", ue.StatusCode)
				}
				if ue.RetryAfter < tt.retryAfter[0] || ue.RetryAfter > tt.retryAfter[1] {
					t.Errorf("RetryAfter = %s, want %s..%s", ue.RetryAfter, tt.retryAfter[0], tt.retryAfter[1])
				}
				if tt.title != "" && ue.Title != tt.title {
					t.Errorf("title = %q, want %q", ue.Title, tt.title)
				}
				if tt.problem != "" && ue.ProblemType != tt.problem {
					t.Errorf("problem type = %q", ue.ProblemType)
				}
				if tt.kind == ordersync.UpstreamValidation {
					var ve *ordersync.ValidationError
					if !errors.As(err, &ve) {
						t.Fatalf("err %v does not wrap a *ValidationError", err)
					}
					if !reflect.DeepEqual(ve.Fields, tt.fields) && (len(ve.Fields) > 0 || len(tt.fields) > 0) {
						t.Errorf("fields = %q, want %q", ve.Fields, tt.fields)
					}
				}
				if got := errors.Is(err, ordersync.ErrNotFound); got != (tt.kind == ordersync.UpstreamNotFound) {
					t.Errorf("errors.Is(err, ErrNotFound) = %v", got)
				}
				if tt.inMessage != "" && !strings.Contains(err.Error(), tt.inMessage) {
					t.Errorf("message %q lacks %q", err, tt.inMessage)
				}
				if !strings.HasPrefix(err.Error(), cl.op+": ") {
					t.Errorf("message %q does not start with the op", err)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("message %q holds the secret key", err)
				}
			})
		}
	}
}

func TestTransportFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := paymentlink.New(paymentlink.Config{BaseURL: "http://" + addr, SecretKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range calls {
			err := cl.run(context.Background(), c)
			var ue *ordersync.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != ordersync.UpstreamTransport || !ue.Retryable() || ue.StatusCode != 0 {
				t.Fatalf("%s: err = %v, want a retryable transport error", cl.name, err)
			}
			var opErr *net.OpError
			if !errors.As(err, &opErr) {
				t.Errorf("%s: err %v does not wrap the network error", cl.name, err)
			}
		}
	})

	// hang answers nothing until the client goes away or the test ends.
	hang := func(stop <-chan struct{}) http.HandlerFunc {
		return func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}
	}

	t.Run("per-request timeout", func(t *testing.T) {
		stop := make(chan struct{})
		u := startUpstream(t, hang(stop))
		t.Cleanup(func() { close(stop) })
		c := newClient(t, u, paymentlink.Config{Timeout: 100 * time.Millisecond})
		for _, cl := range calls {
			start := time.Now()
			err := cl.run(context.Background(), c)
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("%s: returned after %s", cl.name, elapsed)
			}
			var ue *ordersync.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != ordersync.UpstreamTransport || !ue.Retryable() {
				t.Fatalf("%s: err = %v, want a retryable transport error", cl.name, err)
			}
			if !errors.Is(err, paymentlink.ErrTimeout) {
				t.Errorf("%s: err %v is not ErrTimeout", cl.name, err)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("%s: a timeout %v looks like the caller's cancellation", cl.name, err)
			}
		}
	})

	t.Run("body cut short by timeout", func(t *testing.T) {
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		u := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5000")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"orderCode":"yY7Mcnd",`))
			w.(http.Flusher).Flush()
			hang(stop)(w, r)
		})
		c := newClient(t, u, paymentlink.Config{Timeout: 100 * time.Millisecond})
		err := calls[0].run(context.Background(), c)
		if kind := ordersync.UpstreamErrorKindOf(err); kind != ordersync.UpstreamTransport || !errors.Is(err, paymentlink.ErrTimeout) {
			t.Fatalf("err = %v (kind %q), want a transport timeout", err, kind)
		}
	})

	t.Run("connection closed mid-body", func(t *testing.T) {
		u := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"orderCode\":")
			buf.Flush()
			conn.Close()
		})
		c := newClient(t, u, paymentlink.Config{})
		for _, cl := range calls {
			err := cl.run(context.Background(), c)
			if kind := ordersync.UpstreamErrorKindOf(err); kind != ordersync.UpstreamTransport {
				t.Errorf("%s: err = %v (kind %q), want transport: a cut body is not a protocol error", cl.name, err, kind)
			}
		}
	})

	t.Run("caller cancels", func(t *testing.T) {
		stop := make(chan struct{})
		arrived := make(chan struct{}, len(calls))
		u := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			hang(stop)(w, r)
		})
		t.Cleanup(func() { close(stop) })
		c := newClient(t, u, paymentlink.Config{})
		for _, cl := range calls {
			// Cancelled once the request is at the upstream, waiting.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-arrived:
					cancel()
				case <-ctx.Done():
				}
			}()
			err := cl.run(ctx, c)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: err = %v, want context.Canceled", cl.name, err)
			}
			if kind := ordersync.UpstreamErrorKindOf(err); kind != "" {
				t.Errorf("%s: the caller's cancellation came back as an upstream %s error", cl.name, kind)
			}
			if !strings.HasPrefix(err.Error(), cl.op+": ") {
				t.Errorf("%s: message %q does not name the op", cl.name, err)
			}
		}
	})

	t.Run("caller deadline shorter than timeout", func(t *testing.T) {
		stop := make(chan struct{})
		u := startUpstream(t, hang(stop))
		t.Cleanup(func() { close(stop) })
		c := newClient(t, u, paymentlink.Config{Timeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := calls[0].run(ctx, c)
		if !errors.Is(err, context.DeadlineExceeded) || ordersync.UpstreamErrorKindOf(err) != "" {
			t.Errorf("err = %v, want the caller's context.DeadlineExceeded", err)
		}
	})

	t.Run("already cancelled sends nothing", func(t *testing.T) {
		u := startUpstream(t, reply(t, http.StatusOK, "order-pending.json"))
		c := newClient(t, u, paymentlink.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := calls[0].run(ctx, c); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
		if n := len(u.seen()); n != 0 {
			t.Errorf("%d requests sent", n)
		}
	})
}

func TestBodyLargerThanLimitIsProtocolError(t *testing.T) {
	u := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"orderCode":"yY7Mcnd","description":"`))
		w.Write(bytes.Repeat([]byte("x"), paymentlink.MaxBodyBytes))
		w.Write([]byte(`"}`))
	})
	c := newClient(t, u, paymentlink.Config{})
	err := calls[0].run(context.Background(), c)
	if kind := ordersync.UpstreamErrorKindOf(err); kind != ordersync.UpstreamProtocol {
		t.Fatalf("err = %v (kind %q), want protocol", err, kind)
	}
}

func TestConnectionsAreReused(t *testing.T) {
	u := startUpstream(t, reply(t, http.StatusOK, "order-paid.json"))
	c := newClient(t, u, paymentlink.Config{})
	const goroutines, each = 32, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for range each {
				if _, err := c.GetOrder(context.Background(), "yY7Mcnd"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("GetOrder: %v", err)
	}
	// With net/http's default of 2 idle connections per host, 100 to 200 of
	// the 800 requests open a connection of their own; a few extra come from
	// the transport dialing while a connection is on its way back.
	if n := u.newConns.Load(); n > 2*goroutines {
		t.Errorf("%d connections opened for %d concurrent callers", n, goroutines)
	}
	// Error answers are read to the end, so their connections are reused too.
	before := u.newConns.Load()
	u.mu.Lock()
	u.handle = reply(t, http.StatusNotFound, "error-404.json")
	u.mu.Unlock()
	for range 20 {
		if _, err := c.GetOrder(context.Background(), "yY7Mcnd"); !errors.Is(err, ordersync.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	}
	if n := u.newConns.Load() - before; n > 0 {
		t.Errorf("%d new connections for sequential 404s", n)
	}
}

func BenchmarkGetOrder(b *testing.B) {
	doc := fixture(b, "order-paid.json")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /paymentlink/order/{code}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	defer func() { srv.Close(); <-done }()

	c, err := paymentlink.New(paymentlink.Config{BaseURL: "http://" + ln.Addr().String(), SecretKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdleConnections()
	b.SetParallelism(32) // 64 callers on 2 cores, like the worker
	b.ReportAllocs()
	b.ResetTimer()
	cpu := rusage.Start(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.GetOrder(context.Background(), "yY7Mcnd"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	cpu.Report(b, b.N, "cpu-µs/req")
}
