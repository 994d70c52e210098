// Package delivery is the wire format of ordersync's HTTP deliveries, for
// both sides: the engine signs each request with it, and a fulfilment system
// written in Go verifies what it receives with Verify.
//
// Deliveries follow Standard Webhooks (https://www.standardwebhooks.com): a
// JSON POST with the headers webhook-id (stable for one event and one
// endpoint, across retries and replays: deduplicate by it), webhook-timestamp
// (Unix seconds of the attempt) and webhook-signature ("v1,<base64
// HMAC-SHA256 of id.timestamp.body>", several separated by spaces while a
// secret is being rotated). Secrets are "whsec_" followed by the base64 key.
// Receivers in other languages use the specification's own libraries.
package delivery

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The headers of a delivery.
const (
	HeaderID        = standardwebhooks.HeaderWebhookID
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp
	HeaderSignature = standardwebhooks.HeaderWebhookSignature
)

// The event types a delivery carries.
const (
	// EventOrderPaid is the PAID trigger: once per order, when the mirror
	// first sees it PAID (or FINALIZED if PAID was never observed).
	EventOrderPaid = "order.paid"
	// EventOrderStatusChanged is every status transition the mirror records.
	EventOrderStatusChanged = "order.status_changed"
	// EventPing is sent by the test action, never by an order.
	EventPing = "ping"
)

// SecretPrefix starts every secret.
const SecretPrefix = "whsec_"

// Key sizes the specification allows, in bytes.
const (
	minKeyBytes = 24
	maxKeyBytes = 64
	newKeyBytes = 32
)

// DefaultTolerance is how far a webhook-timestamp may be from the
// receiver's clock; the specification's recommendation.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify and of secret parsing. They are the reference library's
// own where it has one, so errors.Is works with either name.
var (
	ErrMissingHeaders      = standardwebhooks.ErrRequiredHeaders
	ErrInvalidHeaders      = standardwebhooks.ErrInvalidHeaders
	ErrNoMatchingSignature = standardwebhooks.ErrNoMatchingSignature
	ErrTooOld              = standardwebhooks.ErrMessageTooOld
	ErrTooNew              = standardwebhooks.ErrMessageTooNew
	ErrInvalidSecret       = errors.New("invalid webhook secret")
)

// Event is the body of a delivery.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	// Data is the mirrored order as the read API returns it (the service's
	// own fields plus "account" and "sync") with "statusChange": {"from",
	// "to"} added (OrderEventBody); a ping carries {"endpoint": id}.
	Data json.RawMessage `json:"data"`
}

// NewSecret returns a fresh random secret.
func NewSecret() (string, error) {
	key := make([]byte, newKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("generate webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ValidateSecret checks that s is "whsec_" and base64 of 24 to 64 bytes.
func ValidateSecret(s string) error {
	_, err := secretKey(s)
	return err
}

// secretKey is the key of a valid secret.
func secretKey(s string) ([]byte, error) {
	raw, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: want %s followed by base64", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSecret, err)
	}
	if len(key) < minKeyBytes || len(key) > maxKeyBytes {
		return nil, fmt.Errorf("%w: key is %d bytes, want %d to %d", ErrInvalidSecret, len(key), minKeyBytes, maxKeyBytes)
	}
	return key, nil
}

// Sign sets the three headers of one attempt on h: id, the attempt's
// timestamp, and one v1 signature per secret (the current one first, then
// those still in their rotation grace period).
func Sign(h http.Header, id string, at time.Time, body []byte, secrets ...string) error {
	if id == "" {
		return fmt.Errorf("sign delivery: %w: empty id", ErrInvalidHeaders)
	}
	if len(secrets) == 0 {
		return fmt.Errorf("sign delivery %s: %w: no secret", id, ErrInvalidSecret)
	}
	sec := at.Unix()
	sigs := make([]byte, 0, len(secrets)*(len(sigVersion)+1+base64.StdEncoding.EncodedLen(sha256.Size)))
	for i, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			return fmt.Errorf("sign delivery %s: %w", id, err)
		}
		if i > 0 {
			sigs = append(sigs, ' ')
		}
		sigs = appendSignature(append(append(sigs, sigVersion...), ','), key, id, sec, body)
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(sec, 10))
	h.Set(HeaderSignature, string(sigs))
	return nil
}

// sigVersion is the version a signature is written with.
const sigVersion = "v1"

// appendSignature appends to b the base64 HMAC-SHA256 with key of
// "id.sec.body", as the reference library signs; the body goes into the
// hash as it is rather than copied into that string first.
func appendSignature(b, key []byte, id string, sec int64, body []byte) []byte {
	var buf [64]byte
	prefix := append(strconv.AppendInt(append(append(buf[:0], id...), '.'), sec, 10), '.')
	mac := hmac.New(sha256.New, key)
	mac.Write(prefix)
	mac.Write(body)
	var sum [sha256.Size]byte
	return base64.StdEncoding.AppendEncode(b, mac.Sum(sum[:0]))
}

// Verify checks a received delivery: the headers are present, the
// timestamp is within tolerance of now (DefaultTolerance when tolerance is
// zero), and one of the v1 signatures matches secret. Pass the body exactly
// as received, before any JSON decoding.
func Verify(secret string, headers http.Header, body []byte, tolerance time.Duration) error {
	return verifyAt(secret, headers, body, tolerance, time.Now())
}

func verifyAt(secret string, headers http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	key, err := secretKey(secret)
	if err != nil {
		return fmt.Errorf("verify delivery: %w", err)
	}
	id, signatures := headers.Get(HeaderID), headers.Get(HeaderSignature)
	if id == "" || headers.Get(HeaderTimestamp) == "" || signatures == "" {
		return fmt.Errorf("verify delivery: %w", ErrMissingHeaders)
	}
	sec, err := strconv.ParseInt(headers.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("verify delivery: %w: timestamp: %w", ErrInvalidHeaders, err)
	}
	// The reference library checks the timestamp against a fixed five
	// minutes; the tolerance is the caller's here.
	switch at := time.Unix(sec, 0); {
	case now.Sub(at) > tolerance:
		return fmt.Errorf("verify delivery %s: %w", id, ErrTooOld)
	case at.Sub(now) > tolerance:
		return fmt.Errorf("verify delivery %s: %w", id, ErrTooNew)
	}
	// As the reference library compares: each space-separated "v1,<sig>"
	// (what follows a second comma ignored) against the expected one, in
	// constant time.
	var buf [64]byte
	want := appendSignature(buf[:0], key, id, sec, body)
	for versioned := range strings.SplitSeq(signatures, " ") {
		parts := strings.Split(versioned, ",")
		if len(parts) >= 2 && parts[0] == sigVersion && hmac.Equal([]byte(parts[1]), want) {
			return nil
		}
	}
	return fmt.Errorf("verify delivery %s: %w", id, ErrNoMatchingSignature)
}
