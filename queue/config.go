package queue

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// DefaultAckWait is how long a delivered event may go unsettled before it
// is redelivered: the events a killed worker held come back after it.
const DefaultAckWait = 30 * time.Second

// Config configures the streams and the durable consumer.
type Config struct {
	// SubjectPrefix is the first subject token; default "ordersync".
	SubjectPrefix string
	// EventsStream and OrdersStream name the streams; defaults
	// "ORDERSYNC_EVENTS" and "ORDERSYNC_ORDERS".
	EventsStream string
	OrdersStream string
	// Replicas of both streams; default 1. Use 3 on a cluster.
	Replicas int
	// DuplicateWindow is how long the events stream remembers a MsgID;
	// default 2m.
	DuplicateWindow time.Duration
	// OrdersDuplicateWindow is the same for order events; default 1h, long
	// enough to cover a relay that crashed between publish and bookkeeping.
	OrdersDuplicateWindow time.Duration
	// OrdersMaxAge is how long order events are kept for subscribers;
	// default 7 days.
	OrdersMaxAge time.Duration
	// Consumer is the durable consumer workers share; default
	// "ordersync-worker".
	Consumer string
	// AckWait is how long a delivered event may go unsettled before it is
	// redelivered; default DefaultAckWait.
	AckWait time.Duration
	// MaxAckPending bounds delivered-but-unsettled events; default 20000.
	MaxAckPending int
	// ProbeEvery is how long a readiness probe's write answers Ready
	// before the next one is made; default DefaultProbeEvery, negative:
	// a write on every call.
	ProbeEvery time.Duration
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

func (c *Config) withDefaults() {
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = string(ordersync.DefaultNamespace)
	}
	if c.EventsStream == "" {
		c.EventsStream = "ORDERSYNC_EVENTS"
	}
	if c.OrdersStream == "" {
		c.OrdersStream = "ORDERSYNC_ORDERS"
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.OrdersDuplicateWindow == 0 {
		c.OrdersDuplicateWindow = time.Hour
	}
	if c.OrdersMaxAge == 0 {
		c.OrdersMaxAge = 7 * 24 * time.Hour
	}
	if c.Consumer == "" {
		c.Consumer = "ordersync-worker"
	}
	if c.ProbeEvery == 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 20000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	for _, p := range strings.Split(c.SubjectPrefix, ".") {
		if !validToken(p) {
			return fmt.Errorf("queue: SubjectPrefix %q is not a valid subject prefix", c.SubjectPrefix)
		}
	}
	for field, name := range map[string]string{"EventsStream": c.EventsStream, "OrdersStream": c.OrdersStream, "Consumer": c.Consumer} {
		if !validToken(name) {
			return fmt.Errorf("queue: %s %q is not a valid name", field, name)
		}
	}
	if c.EventsStream == c.OrdersStream {
		return fmt.Errorf("queue: EventsStream and OrdersStream are both %q", c.EventsStream)
	}
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("queue: Replicas %d out of range 1..5", c.Replicas)
	case c.DuplicateWindow < 0:
		return fmt.Errorf("queue: DuplicateWindow %s must be positive", c.DuplicateWindow)
	case c.OrdersDuplicateWindow < 0:
		return fmt.Errorf("queue: OrdersDuplicateWindow %s must be positive", c.OrdersDuplicateWindow)
	case c.OrdersMaxAge < 0:
		return fmt.Errorf("queue: OrdersMaxAge %s must be positive", c.OrdersMaxAge)
	case c.OrdersDuplicateWindow > c.OrdersMaxAge:
		return fmt.Errorf("queue: OrdersDuplicateWindow %s exceeds OrdersMaxAge %s", c.OrdersDuplicateWindow, c.OrdersMaxAge)
	case c.AckWait <= 0:
		return fmt.Errorf("queue: AckWait %s must be positive", c.AckWait)
	case c.MaxAckPending < 1:
		return fmt.Errorf("queue: MaxAckPending %d must be at least 1", c.MaxAckPending)
	}
	return nil
}

// validToken reports whether s can be one token of a NATS subject or a
// stream or consumer name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	return !strings.ContainsAny(s, ".*> \t\r\n\x00/\\")
}
