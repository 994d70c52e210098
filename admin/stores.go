package admin

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// Stores in the back office: each account the deployment serves is one
// merchant store, chosen by the account parameter on every surface (the
// API's and the console's query, the CLI's --account). AllStores chooses
// every one where a page or report can cover several.

// AllStores is the account parameter's value that chooses every store.
const AllStores = api.AllStores

// StoreChoice is the store a request chose: one account, or every one
// (All, with Account "").
type StoreChoice struct {
	Account string
	All     bool
}

// Param is the choice as the account parameter writes it.
func (c StoreChoice) Param() string {
	if c.All {
		return AllStores
	}
	return c.Account
}

// ChooseStore reads the account parameter against the stores a deployment
// serves: "" is def, AllStores every store where all is allowed. Anything
// else not among known is a *ordersync.ValidationError naming the known
// stores, so a mistyped store never reads as a store without orders.
func ChooseStore(param, def string, known []string, all bool) (StoreChoice, error) {
	param = strings.TrimSpace(param)
	switch {
	case param == "":
		return StoreChoice{Account: def}, nil
	case param == AllStores && all:
		return StoreChoice{All: true}, nil
	case slices.Contains(known, param):
		return StoreChoice{Account: param}, nil
	}
	want := "known stores: " + strings.Join(known, ", ")
	if all {
		want += "; " + AllStores + " for all stores"
	}
	what := fmt.Sprintf("unknown store %q", ordersync.Clip(param, 64))
	if param == AllStores {
		what = "this page shows one store at a time"
	}
	return StoreChoice{}, &ordersync.ValidationError{Title: "unknown store",
		Fields: map[string][]string{"account": {what + " (" + want + ")"}}}
}

// stores are the stores the deployment serves, the default first.
func (s *Server) stores() []string {
	if len(s.cfg.Stores) == 0 {
		return []string{s.cfg.Account}
	}
	return s.cfg.Stores
}

// chooseStore is the request's store choice; all says whether the page or
// endpoint covers every store at once.
func (s *Server) chooseStore(r *http.Request, all bool) (StoreChoice, error) {
	return ChooseStore(r.URL.Query().Get("account"), s.cfg.Account, s.stores(), all)
}

// StoreOption is one entry of a page's store selector.
type StoreOption struct {
	Value, Label string
	Selected     bool
}

// storeOptions are the selector's entries for choice: each store, and all
// stores first where a page covers them.
func (s *Server) storeOptions(choice StoreChoice, all bool) []StoreOption {
	var out []StoreOption
	if all {
		out = append(out, StoreOption{Value: AllStores, Label: "All stores", Selected: choice.All})
	}
	for _, name := range s.stores() {
		out = append(out, StoreOption{Value: name, Label: name, Selected: !choice.All && choice.Account == name})
	}
	return out
}
