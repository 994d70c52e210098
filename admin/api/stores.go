package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ordersync/ordersync"
)

// Stores in the back office: each account the deployment serves is one
// merchant store, chosen by the account parameter on every surface (the
// API's and the console's query, the CLI's --account). AllStores chooses
// every one where a page or report can cover several.

// AllStores is the account parameter's value that chooses every store.
const AllStores = "*"

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

// Stores are the stores a deployment serves: the one a request naming
// none is about, and every one, the default first.
type Stores struct {
	// Default is the account served when a request names none.
	Default string
	// Names are every store served; none means Default alone.
	Names []string
}

// List is every store served, the default first.
func (s Stores) List() []string {
	if len(s.Names) == 0 {
		return []string{s.Default}
	}
	return s.Names
}

// Account is the account a request names (its account parameter), or the
// default one, unchecked: a store not served is the caller's to refuse.
func (s Stores) Account(r *http.Request) string {
	if a := r.URL.Query().Get("account"); a != "" {
		return a
	}
	return s.Default
}

// Choose is the request's store choice (ChooseStore); all says whether
// the page or endpoint covers every store at once.
func (s Stores) Choose(r *http.Request, all bool) (StoreChoice, error) {
	return ChooseStore(r.URL.Query().Get("account"), s.Default, s.List(), all)
}
