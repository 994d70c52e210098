package console

import (
	"github.com/ordersync/ordersync/admin/api"
)

// StoreOption is one entry of a page's store selector.
type StoreOption struct {
	Value, Label string
	Selected     bool
}

// storeOptions are the selector's entries for choice: each store, and all
// stores first where a page covers them.
func (s *Console) storeOptions(choice api.StoreChoice, all bool) []StoreOption {
	var out []StoreOption
	if all {
		out = append(out, StoreOption{Value: api.AllStores, Label: "All stores", Selected: choice.All})
	}
	for _, name := range s.cfg.Stores.List() {
		out = append(out, StoreOption{Value: name, Label: name, Selected: !choice.All && choice.Account == name})
	}
	return out
}
