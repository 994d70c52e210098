package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strings"
	"sync"

	"github.com/ordersync/ordersync"
)

// SignatureHeader carries the HMAC-SHA256 of the raw body.
const SignatureHeader = "X-H4B-Hmac-Sha256"

// Sign returns the signature the provider sends for body: standard base64
// of HMAC-SHA256 keyed with secret.
func Sign(secret string, body []byte) string {
	return base64.StdEncoding.EncodeToString(mac(secret, body))
}

func mac(secret string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks header against every secret (several during a rotation).
// The signature may be base64 (standard or URL-safe, padded or not) or hex;
// the comparison is constant-time.
func Verify(secrets []string, header string, body []byte) ordersync.SignatureVerdict {
	return newVerifier(secrets).verify(header, body)
}

// verifier holds a pool of keyed HMACs per secret: a receiver verifies
// every request, and keying an HMAC allocates.
type verifier struct{ macs []*sync.Pool }

func newVerifier(secrets []string) *verifier {
	v := &verifier{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		key := []byte(s)
		v.macs = append(v.macs, &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }})
	}
	return v
}

func (v *verifier) verify(header string, body []byte) ordersync.SignatureVerdict {
	header = strings.TrimSpace(header)
	if header == "" {
		return ordersync.SignatureMissing
	}
	got, ok := decodeSignature(header)
	if !ok {
		return ordersync.SignatureInvalid
	}
	valid := false
	var sum [sha256.Size]byte
	for _, pool := range v.macs {
		h := pool.Get().(hash.Hash)
		h.Reset()
		h.Write(body)
		if hmac.Equal(got, h.Sum(sum[:0])) {
			valid = true
		}
		pool.Put(h)
	}
	if !valid {
		return ordersync.SignatureInvalid
	}
	return ordersync.SignatureValid
}

// decodeSignature accepts the encodings of a 32-byte MAC. Lengths tell
// them apart: hex is 64 characters, base64 43 or 44.
var signatureEncodings = []*base64.Encoding{
	base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding,
}

func decodeSignature(s string) ([]byte, bool) {
	if len(s) == 2*sha256.Size {
		b, err := hex.DecodeString(s)
		return b, err == nil
	}
	for _, enc := range signatureEncodings {
		if b, err := enc.DecodeString(s); err == nil && len(b) == sha256.Size {
			return b, true
		}
	}
	return nil, false
}
