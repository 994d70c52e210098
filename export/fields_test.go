package export_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

// everyField is an exporter that reads every field of each order, whatever
// fields the export asks for.
type everyField struct{ *store.DB }

func (e everyField) ExportOrders(ctx context.Context, params ordersync.ExportParams, fn func([]ordersync.ExportedOrder) error) error {
	params.Fields = ordersync.ExportEveryField
	return e.DB.ExportOrders(ctx, params, fn)
}

// TestExportFieldsWriteTheSameFile checks that an export that reads only
// the fields its kind writes (ExportParams.Fields) writes, byte for byte,
// the file an export of every field writes: each kind, format and sort,
// in batches of 2 (so each batch continues from the last one's cursor),
// on orders that fill every written column one way or another.
func TestExportFieldsWriteTheSameFile(t *testing.T) {
	urls := map[string]string{"sqlite": filepath.Join(t.TempDir(), "m.db")}
	if pg := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"); pg != "" {
		run, err := testenv.New(context.Background(), "", pg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Close() })
		urls["postgres"] = run.DatabaseURL
	} else {
		t.Log("ORDERSYNC_TEST_POSTGRES_URL is not set: SQLite only")
	}
	for dialect, url := range urls {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, store.Config{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			applyVariedOrders(t, db)
			loc, err := time.LoadLocation("America/El_Salvador")
			if err != nil {
				t.Fatal(err)
			}
			sorts := []ordersync.OrderSort{ordersync.SortCreatedDesc, ordersync.SortCreatedAsc, ordersync.SortPaidDesc,
				ordersync.SortPaidAsc, ordersync.SortTotalDesc, ordersync.SortTotalAsc}
			for _, kind := range export.Kinds {
				for _, format := range []export.Format{export.CSV, export.JSONL} {
					for _, sort := range sorts {
						filter := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: sort}
						opts := export.Options{Kind: kind, Format: format, Location: loc}
						var narrow, every bytes.Buffer
						n, err := export.Run(ctx, db, filter, opts, 2, &narrow, nil)
						if err != nil {
							t.Fatal(err)
						}
						m, err := export.Run(ctx, everyField{db}, filter, opts, 2, &every, nil)
						if err != nil {
							t.Fatal(err)
						}
						if n != m || narrow.String() != every.String() || n == 0 {
							t.Errorf("%s %s %s: %d rows read by fields, %d of every field:\n%s\nwant:\n%s", kind, format, sort, n, m, &narrow, &every)
						}
					}
				}
			}
		})
	}
}

// applyVariedOrders applies orders that differ in every column an export
// writes: statuses with their changes, a payment with a buyer, one without,
// none, a three-decimal currency, a promotional price, equal totals, no
// creation time, another account.
func applyVariedOrders(t *testing.T, db *store.DB) {
	t.Helper()
	created := time.Date(2026, 10, 10, 18, 0, 12, 345e6, time.UTC)
	type spec struct {
		account, code string
		statuses      []ordersync.Status
		currency      string
		total         string
		payment       string
		created       bool
	}
	buyer := `,"payment":{"authorizationCode":"-204981","buyer":{"name":"José Peña","phone":"+50370001234","email":"@jose@example.com"}}`
	specs := []spec{
		{"default", "c0", []ordersync.Status{ordersync.StatusPending, ordersync.StatusPaid}, "USD", "17.99", buyer, true},
		{"default", "c1", []ordersync.Status{ordersync.StatusPending}, "USD", "5.00", "", true},
		{"default", "c2", []ordersync.Status{ordersync.StatusPaid}, "KWD", "1.250", `,"payment":{"authorizationCode":"000123"}`, true},
		{"default", "c3", []ordersync.Status{ordersync.StatusPending, ordersync.StatusCancelled}, "USD", "17.99", "", false},
		{"default", "c4", []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized}, "MXN", "17.99", buyer, true},
		{"default", "c5", []ordersync.Status{ordersync.StatusPaid}, "USD", "0.10", buyer, false},
		{"other", "z0", []ordersync.Status{ordersync.StatusPaid}, "USD", "3.00", buyer, true},
	}
	seq := int64(0)
	for i, s := range specs {
		for j, status := range s.statuses {
			seq++
			when := fmt.Sprintf(`,"created":%q`, created.Add(time.Duration(i%3)*time.Hour).Format(time.RFC3339Nano))
			if !s.created {
				when = ""
			}
			payment := s.payment
			if status == ordersync.StatusPending || status == ordersync.StatusCancelled {
				payment = ""
			}
			doc := fmt.Sprintf(`{"orderId":%d,"orderCode":%q,"orderReference":"=ref-%d","name":"Pedido %d","description":"d","orderStatus":%q,
"lineItems":[{"productId":1,"sku":"COMBO","name":"Combo Clásico","price":6.50,"quantity":2,"subTotal":13.00},
{"productId":2,"sku":"SODA","name":"Refresco, 600 ml","price":1.25,"promoPrice":0.99,"quantity":1,"subTotal":0.99}],
"subtotal":%s,"totalDetails":{"shippingAmount":2.00,"discountAmount":0.5,"surchargeAmount":%d},"total":%s,
"store":{"name":"Tienda","currencyCode":%q,"timezone":"America/El_Salvador"}%s%s}`,
				100+i, s.code, i, i, status, s.total, i, s.total, s.currency, payment, when)
			o, err := ordersync.DecodeOrder([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v\n%s", s.code, err, doc)
			}
			at := created.Add(time.Duration(seq) * time.Minute)
			if _, err := db.ApplyOrders(context.Background(), []ordersync.ApplyParams{{Account: s.account, Order: o, Seq: seq,
				FetchedAt: at, Cause: []ordersync.Cause{ordersync.CauseWebhook, ordersync.CauseReconcile}[j%2]}}); err != nil {
				t.Fatalf("apply %s %s: %v", s.code, status, strings.TrimSpace(err.Error()))
			}
		}
	}
}
