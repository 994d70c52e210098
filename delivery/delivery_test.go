package delivery

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ordersync/ordersync"
)

// The specification's published test vector, as the reference libraries'
// tests carry it (libraries/go/webhook_test.go TestWebhookSign, and the
// same values in the C#, Java and Elixir suites).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesSpecificationVector(t *testing.T) {
	h := http.Header{}
	if err := Sign(h, vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), vectorSecret); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		HeaderID: vectorID, HeaderTimestamp: "1614265330", HeaderSignature: vectorSignature,
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if err := verifyAt(vectorSecret, h, []byte(vectorBody), time.Minute, time.Unix(vectorTimestamp+30, 0)); err != nil {
		t.Errorf("Verify of the vector: %v", err)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(vectorTimestamp, 0)
	signed := func(t *testing.T) http.Header {
		h := http.Header{}
		if err := Sign(h, vectorID, now, []byte(vectorBody), vectorSecret); err != nil {
			t.Fatal(err)
		}
		return h
	}
	other, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		edit   func(h http.Header)
		secret string
		body   string
		at     time.Time
		want   error
	}{
		{name: "valid", at: now},
		{name: "within tolerance late", at: now.Add(5 * time.Minute)},
		{name: "too old", at: now.Add(5*time.Minute + time.Second), want: ErrTooOld},
		{name: "too new", at: now.Add(-5*time.Minute - time.Second), want: ErrTooNew},
		{name: "tampered body", at: now, body: `{"test": 2432232315}`, want: ErrNoMatchingSignature},
		{name: "other secret", at: now, secret: other, want: ErrNoMatchingSignature},
		{name: "no id", at: now, edit: func(h http.Header) { h.Del(HeaderID) }, want: ErrMissingHeaders},
		{name: "no signature", at: now, edit: func(h http.Header) { h.Del(HeaderSignature) }, want: ErrMissingHeaders},
		{name: "bad timestamp", at: now, edit: func(h http.Header) { h.Set(HeaderTimestamp, "yesterday") }, want: ErrInvalidHeaders},
		{name: "id changed", at: now, edit: func(h http.Header) { h.Set(HeaderID, "msg_other") }, want: ErrNoMatchingSignature},
		{name: "v2 only", at: now, edit: func(h http.Header) {
			h.Set(HeaderSignature, strings.Replace(h.Get(HeaderSignature), "v1,", "v2,", 1))
		}, want: ErrNoMatchingSignature},
		{name: "bad secret", at: now, secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", want: ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := signed(t)
			if tt.edit != nil {
				tt.edit(h)
			}
			secret, body := vectorSecret, vectorBody
			if tt.secret != "" {
				secret = tt.secret
			}
			if tt.body != "" {
				body = tt.body
			}
			err := verifyAt(secret, h, []byte(body), 0, tt.at)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// During a rotation a delivery carries both signatures, so a receiver
// holding either secret accepts it.
func TestSignDuringRotation(t *testing.T) {
	oldSecret, newSecret := vectorSecret, mustSecret(t)
	h := http.Header{}
	at := time.Now()
	if err := Sign(h, "msg_1", at, []byte(vectorBody), newSecret, oldSecret); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Get(HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures, want 2: %q", n, h.Get(HeaderSignature))
	}
	for _, s := range []string{oldSecret, newSecret} {
		if err := Verify(s, h, []byte(vectorBody), 0); err != nil {
			t.Errorf("Verify with %s…: %v", s[:10], err)
		}
	}
	if err := Verify(mustSecret(t), h, []byte(vectorBody), 0); !errors.Is(err, ErrNoMatchingSignature) {
		t.Errorf("Verify with a third secret = %v, want ErrNoMatchingSignature", err)
	}
}

// Sign hashes the body in place of the reference library's joined string:
// the header must be the library's, byte for byte, for any id and body.
func TestSignMatchesReferenceLibrary(t *testing.T) {
	secrets := []string{mustSecret(t), vectorSecret}
	at := time.Unix(1764115200, 0)
	for _, body := range []string{"", vectorBody, `{"data":{"orderCode":"ÄB-1"}}`, strings.Repeat("x", 5000)} {
		h := http.Header{}
		if err := Sign(h, "whk_"+body[:min(len(body), 8)], at, []byte(body), secrets...); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, s := range secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				t.Fatal(err)
			}
			sig, err := wh.Sign(h.Get(HeaderID), at, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, sig)
		}
		if got := h.Get(HeaderSignature); got != strings.Join(want, " ") {
			t.Errorf("body %.20q: signature %q, want the library's %q", body, got, strings.Join(want, " "))
		}
	}
}

func TestSecrets(t *testing.T) {
	s := mustSecret(t)
	if !strings.HasPrefix(s, SecretPrefix) {
		t.Errorf("NewSecret = %q, want prefix %s", s, SecretPrefix)
	}
	if s == mustSecret(t) {
		t.Error("NewSecret returned the same secret twice")
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!", "whsec_c2hvcnQ=", strings.TrimPrefix(vectorSecret, SecretPrefix)} {
		if err := ValidateSecret(bad); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("ValidateSecret(%q) = %v, want ErrInvalidSecret", bad, err)
		}
	}
	if err := Sign(http.Header{}, "msg_1", time.Now(), nil); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("Sign without a secret = %v, want ErrInvalidSecret", err)
	}
}

func mustSecret(t *testing.T) string {
	t.Helper()
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateSecret(s); err != nil {
		t.Fatalf("NewSecret made an invalid secret: %v", err)
	}
	return s
}

// The wire names are the domain's.
func TestEventNamesAreTheDomains(t *testing.T) {
	if EventOrderPaid != string(ordersync.HookOrderPaid) || EventOrderStatusChanged != string(ordersync.HookOrderStatusChanged) {
		t.Error("delivery's event names differ from ordersync's")
	}
}

// Verify compares signatures itself: it accepts exactly what the
// reference library accepts, timestamp apart.
func TestVerifyAgreesWithReferenceLibrary(t *testing.T) {
	at := time.Unix(vectorTimestamp, 0)
	h := http.Header{}
	if err := Sign(h, vectorID, at, []byte(vectorBody), vectorSecret); err != nil {
		t.Fatal(err)
	}
	good := h.Get(HeaderSignature)
	wh, err := standardwebhooks.NewWebhook(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []string{good, "v2," + good[3:], good + ",extra", "v1,x " + good, good + " v1,x", "v1," + good, good[:len(good)-1], "v1", " ", good + "  "} {
		for _, ts := range []string{"1614265330", "01614265330"} {
			h := http.Header{}
			h.Set(HeaderID, vectorID)
			h.Set(HeaderTimestamp, ts)
			h.Set(HeaderSignature, sig)
			want := wh.VerifyIgnoringTimestamp([]byte(vectorBody), h) == nil
			if got := verifyAt(vectorSecret, h, []byte(vectorBody), time.Minute, at) == nil; got != want {
				t.Errorf("signature %q, timestamp %s: Verify accepts %v, the library %v", sig, ts, got, want)
			}
		}
	}
}
