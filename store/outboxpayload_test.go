package store

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestOutboxPayloadStored: SQLite keeps an outbox message's payload as a
// zstd frame of under half the JSON's size and PostgreSQL keeps the JSON;
// either way the relay reads back exactly the JSON the apply handed it. A
// row written raw (by an earlier release) reads as it is; a frame that no
// longer decodes is an error naming the message, and the row stays.
func TestOutboxPayloadStored(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		res := apply(t, db, fetched(orderDoc(t, "zpaid", 1, ordersync.StatusPaid), 1))
		handed := res[0].Messages
		if len(handed) != 2 {
			t.Fatalf("the apply handed %d messages, want the status change and the PAID trigger", len(handed))
		}
		var stored [][]byte
		if err := db.read.Select(&stored, `SELECT payload FROM outbox ORDER BY id`); err != nil {
			t.Fatal(err)
		}
		for i, s := range stored {
			json := handed[i].Payload
			compressed := bytes.HasPrefix(s, zstdMagic)
			switch db.dialect {
			case DialectSQLite:
				if !compressed || 2*len(s) > len(json) {
					t.Errorf("message %d stored as %d bytes (a zstd frame: %v) for %d bytes of JSON; want a frame under half", i, len(s), compressed, len(json))
				}
			case DialectPostgres:
				if !bytes.Equal(s, json) {
					t.Errorf("message %d stored as %q, want the JSON %s", i, s, json)
				}
			}
		}
		pending, err := db.PendingOutbox(ctx, 10)
		if err != nil || len(pending) != 2 {
			t.Fatalf("PendingOutbox = %d messages, %v; want 2", len(pending), err)
		}
		for i, m := range pending {
			if !bytes.Equal(m.Payload, handed[i].Payload) {
				t.Errorf("read back %s\nwant the JSON handed to the relay %s", m.Payload, handed[i].Payload)
			}
		}

		// Written raw, as an earlier release does.
		if _, err := db.write.ExecContext(ctx, db.rebind(`UPDATE outbox SET payload = ? WHERE id = ?`), []byte(`{"raw":true}`), pending[0].ID); err != nil {
			t.Fatal(err)
		}
		if pending, err = db.PendingOutbox(ctx, 10); err != nil || string(pending[0].Payload) != `{"raw":true}` {
			t.Fatalf("a raw row read back as %q, %v; want it as it is", pending[0].Payload, err)
		}

		// A frame cut short.
		cut := append(bytes.Clone(zstdMagic), 0x20, 0x01)
		if _, err := db.write.ExecContext(ctx, db.rebind(`UPDATE outbox SET payload = ? WHERE id = ?`), cut, pending[1].ID); err != nil {
			t.Fatal(err)
		}
		_, err = db.PendingOutbox(ctx, 10)
		if err == nil || !strings.Contains(err.Error(), "outbox message") {
			t.Fatalf("PendingOutbox over a broken frame: %v; want an error naming the message", err)
		}
		var left int
		if err := db.read.Get(&left, `SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL`); err != nil || left != 2 {
			t.Fatalf("%d unsent rows left, %v; want both kept", left, err)
		}
	})
}

// BenchmarkOutboxPayload: what the apply spends to keep one order event's
// payload on SQLite, and the stored bytes per byte of JSON.
func BenchmarkOutboxPayload(b *testing.B) {
	json, err := os.ReadFile("testdata/payload_detail.json")
	if err != nil {
		b.Fatal(err)
	}
	db := &DB{dialect: DialectSQLite}
	var stored []byte
	for b.Loop() {
		stored = db.storedPayload(json)
	}
	b.ReportMetric(float64(len(stored))/float64(len(json)), "stored/json")
}
