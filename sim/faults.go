package sim

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// Faults are the misbehaviours the simulator injects, each a setting. Rates
// are probabilities in [0, 1] drawn per event or per API call from the
// Config.Seed, so the same seed and the same sequence of calls inject the
// same faults. The zero value injects nothing.
type Faults struct {
	// DuplicateRate sends a webhook twice (identical bodies).
	DuplicateRate float64
	// ReorderRate holds a webhook back for ReorderDelay, so that later
	// events overtake it.
	ReorderRate  float64
	ReorderDelay time.Duration // default 1s
	// DelayMax delays every webhook by a random time below it.
	DelayMax time.Duration
	// DropRate never delivers a webhook.
	DropRate float64
	// GetLatency is added to every GET /paymentlink/order.
	GetLatency time.Duration
	// ServerErrorRate answers API calls with a 500 problem body; a failed
	// checkout creates nothing.
	ServerErrorRate float64
	// RateLimitRate answers API calls with 429 and Retry-After (whole
	// seconds, at least 1).
	RateLimitRate float64
	RetryAfter    time.Duration // default 1s
	// HangRate makes API calls hang for HangDuration, or until the client
	// goes away or the simulator closes, before they are answered normally.
	HangRate     float64
	HangDuration time.Duration // default 30s
	// OtherProductRate adds, after an order event, an event of another
	// product (orderType COUPON_APP, an unrelated orderId).
	OtherProductRate float64
	// SubscriptionRate adds, after an order event, a subscription event (no
	// orderId, a subscriptionId).
	SubscriptionRate float64
}

// Defaults of Faults, used when the matching rate is set and the duration is
// not.
const (
	DefaultReorderDelay = time.Second
	DefaultRetryAfter   = time.Second
	DefaultHangDuration = 30 * time.Second
)

func (f Faults) withDefaults() Faults {
	if f.ReorderDelay == 0 {
		f.ReorderDelay = DefaultReorderDelay
	}
	if f.RetryAfter == 0 {
		f.RetryAfter = DefaultRetryAfter
	}
	if f.HangDuration == 0 {
		f.HangDuration = DefaultHangDuration
	}
	return f
}

func (f Faults) validate() error {
	rates := []struct {
		name string
		v    float64
	}{
		{"DuplicateRate", f.DuplicateRate}, {"ReorderRate", f.ReorderRate}, {"DropRate", f.DropRate},
		{"ServerErrorRate", f.ServerErrorRate}, {"RateLimitRate", f.RateLimitRate}, {"HangRate", f.HangRate},
		{"OtherProductRate", f.OtherProductRate}, {"SubscriptionRate", f.SubscriptionRate},
	}
	for _, r := range rates {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("Faults.%s %v is not in [0, 1]", r.name, r.v)
		}
	}
	durations := []struct {
		name string
		v    time.Duration
	}{
		{"ReorderDelay", f.ReorderDelay}, {"DelayMax", f.DelayMax}, {"GetLatency", f.GetLatency},
		{"RetryAfter", f.RetryAfter}, {"HangDuration", f.HangDuration},
	}
	for _, d := range durations {
		if d.v < 0 {
			return fmt.Errorf("Faults.%s %s is negative", d.name, d.v)
		}
	}
	return nil
}

// faultsJSON is Faults on the control API: durations as Go duration text.
type faultsJSON struct {
	DuplicateRate    float64 `json:"duplicateRate"`
	ReorderRate      float64 `json:"reorderRate"`
	ReorderDelay     string  `json:"reorderDelay"`
	DelayMax         string  `json:"delayMax"`
	DropRate         float64 `json:"dropRate"`
	GetLatency       string  `json:"getLatency"`
	ServerErrorRate  float64 `json:"serverErrorRate"`
	RateLimitRate    float64 `json:"rateLimitRate"`
	RetryAfter       string  `json:"retryAfter"`
	HangRate         float64 `json:"hangRate"`
	HangDuration     string  `json:"hangDuration"`
	OtherProductRate float64 `json:"otherProductRate"`
	SubscriptionRate float64 `json:"subscriptionRate"`
}

// MarshalJSON writes rates as numbers and durations as text such as "1.5s".
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{
		DuplicateRate: f.DuplicateRate, ReorderRate: f.ReorderRate, ReorderDelay: f.ReorderDelay.String(),
		DelayMax: f.DelayMax.String(), DropRate: f.DropRate, GetLatency: f.GetLatency.String(),
		ServerErrorRate: f.ServerErrorRate, RateLimitRate: f.RateLimitRate, RetryAfter: f.RetryAfter.String(),
		HangRate: f.HangRate, HangDuration: f.HangDuration.String(),
		OtherProductRate: f.OtherProductRate, SubscriptionRate: f.SubscriptionRate,
	})
}

// UnmarshalJSON reads what MarshalJSON writes; absent fields are zero.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var j faultsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode faults: %w", err)
	}
	v := Faults{
		DuplicateRate: j.DuplicateRate, ReorderRate: j.ReorderRate, DropRate: j.DropRate,
		ServerErrorRate: j.ServerErrorRate, RateLimitRate: j.RateLimitRate, HangRate: j.HangRate,
		OtherProductRate: j.OtherProductRate, SubscriptionRate: j.SubscriptionRate,
	}
	durations := []struct {
		name string
		text string
		dst  *time.Duration
	}{
		{"reorderDelay", j.ReorderDelay, &v.ReorderDelay}, {"delayMax", j.DelayMax, &v.DelayMax},
		{"getLatency", j.GetLatency, &v.GetLatency}, {"retryAfter", j.RetryAfter, &v.RetryAfter},
		{"hangDuration", j.HangDuration, &v.HangDuration},
	}
	for _, d := range durations {
		if d.text == "" {
			continue
		}
		parsed, err := time.ParseDuration(d.text)
		if err != nil {
			return fmt.Errorf("decode faults: %s: %w", d.name, err)
		}
		*d.dst = parsed
	}
	*f = v
	return nil
}

// FaultKind names an injected fault in Stats.
type FaultKind string

// The kinds of injected fault.
const (
	FaultDuplicate    FaultKind = "duplicate"
	FaultReorder      FaultKind = "reorder"
	FaultDelay        FaultKind = "delay"
	FaultDrop         FaultKind = "drop"
	FaultGetLatency   FaultKind = "get_latency"
	FaultServerError  FaultKind = "server_error"
	FaultRateLimit    FaultKind = "rate_limit"
	FaultHang         FaultKind = "hang"
	FaultOtherProduct FaultKind = "other_product"
	FaultSubscription FaultKind = "subscription"
)

// faultKinds indexes the counters; its order is the stream number of each
// kind's draws, so adding a kind at the end keeps old seeds' sequences.
var faultKinds = []FaultKind{
	FaultDuplicate, FaultReorder, FaultDelay, FaultDrop, FaultGetLatency,
	FaultServerError, FaultRateLimit, FaultHang, FaultOtherProduct, FaultSubscription,
}

// stream is an independent sequence of random draws.
type stream int

const (
	streamDuplicate stream = iota
	streamReorder
	streamDelay
	streamDrop
	streamGetLatency // unused: latency is not random
	streamServerError
	streamRateLimit
	streamHang
	streamOtherProduct
	streamSubscription
	// numFaultKinds: the streams above are numbered like faultKinds.
	numFaultKinds = iota
)

// Streams that are not faults of their own.
const (
	streamDelayAmount stream = iota + numFaultKinds
	streamJitter
	numStreams
)

// dice draws reproducible random numbers without a lock: draw n of a stream
// is a hash of the seed, the stream and n. Each fault has its own stream, so
// switching one fault on does not change the draws of another.
type dice struct {
	seed  uint64
	drawn [numStreams]atomic.Uint64
}

func (d *dice) float(s stream) float64 {
	n := d.drawn[s].Add(1)
	x := splitmix64(d.seed ^ (uint64(s)+1)*0x9e3779b97f4a7c15 ^ n*0xbf58476d1ce4e5b9)
	return float64(x>>11) / (1 << 53)
}

// chance reports whether a fault of the given rate happens on this draw; a
// zero rate draws nothing.
func (d *dice) chance(s stream, rate float64) bool {
	if rate <= 0 {
		return false
	}
	return d.float(s) < rate
}

// duration returns a duration in [0, max).
func (d *dice) duration(s stream, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(d.float(s) * float64(max))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
