package console

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/fake"
)

// listRecorder is a store that remembers the filters it listed by.
type listRecorder struct {
	*fake.Store
	filters []ordersync.OrderFilter
}

func (l *listRecorder) ListOrders(ctx context.Context, f ordersync.OrderFilter) (ordersync.OrderPage, error) {
	l.filters = append(l.filters, f)
	return l.Store.ListOrders(ctx, f)
}

// TestOrdersListIsASummary: the Orders page, which shows no line items or
// metadata, lists a summary of each order, so that the store does not
// read them (a page of each per order where the mirror is not in memory).
func TestOrdersListIsASummary(t *testing.T) {
	db := &listRecorder{Store: fake.NewStore()}
	office := &testOffice{mux: http.NewServeMux(), principal: map[*http.Request]ordersync.Principal{}}
	c := New(Config{Stores: api.Stores{Default: "acme"}, Orders: db, Sessions: db, Clock: time.Now,
		Logger: slog.New(slog.DiscardHandler)}, office)
	t.Cleanup(c.Close)
	c.Routes(office.mux)
	r := httptest.NewRequest("GET", "/console/orders?status=PAID", nil)
	w := httptest.NewRecorder()
	office.ServeAs(w, r, ordersync.Principal{Name: "ops", Role: ordersync.RoleOperator}, ordersync.ViaConsole)
	if w.Code != http.StatusOK || len(db.filters) != 1 || !db.filters[0].Summary {
		t.Errorf("the Orders page: %d, listed by %+v; want one summary listing", w.Code, db.filters)
	}
}
