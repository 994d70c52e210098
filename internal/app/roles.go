package app

import (
	"errors"
	"fmt"
	"strings"
)

// roles is what one process runs.
type roles struct{ receiver, worker, relay, reconciler bool }

func parseRoles(s string) (roles, error) {
	var r roles
	for _, name := range splitList(s) {
		switch strings.ToLower(name) {
		case "all":
			r = roles{true, true, true, true}
		case "receiver":
			r.receiver = true
		case "worker":
			r.worker = true
		case "relay":
			r.relay = true
		case "reconciler":
			r.reconciler = true
		default:
			return r, fmt.Errorf("bad setting: role %q (want all, or a list of receiver, worker, relay, reconciler)", name)
		}
	}
	if r == (roles{}) {
		return r, errors.New("missing setting: role (all, or a list of receiver, worker, relay, reconciler)")
	}
	return r, nil
}
