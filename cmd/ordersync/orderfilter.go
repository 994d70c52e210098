package main

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// orderListFlags are the flags of orders list that fill an
// ordersync.OrderQuery: flag name → the query parameter of the field
// (ordersync.OrderQuery.Param), which a refusal names.
var orderListFlags = []struct{ flag, param, usage string }{
	{"search", "q", "find by order code, order id or authorization code (exactly), reference (its beginning, any case), buyer email (any case), phone (with or without the country code, spaces, dashes, dots, parentheses), total (12.50), or the buyer's name (words or their beginnings, regardless of case and accents); see docs/back-office.md#search"},
	{"since", "since", "only orders created since: RFC 3339 time, YYYY-MM-DD, or a duration back from now (24h); not with --created-from"},
	{"created-from", "createdFrom", "only orders created at or after: RFC 3339 time, or YYYY-MM-DD (midnight in --tz)"},
	{"created-to", "createdTo", "only orders created before: RFC 3339 time, or YYYY-MM-DD (midnight in --tz)"},
	{"paid-from", "paidFrom", "only orders ordersync learned were paid at or after: RFC 3339 time, or YYYY-MM-DD (midnight in --tz)"},
	{"paid-to", "paidTo", "only orders ordersync learned were paid before: RFC 3339 time, or YYYY-MM-DD (midnight in --tz)"},
	{"cancelled-from", "cancelledFrom", "only orders never paid and first cancelled at or after (the daily totals' cancelled): RFC 3339 time, or YYYY-MM-DD"},
	{"cancelled-to", "cancelledTo", "only orders never paid and first cancelled before: RFC 3339 time, or YYYY-MM-DD"},
	{"finalized-from", "finalizedFrom", "only orders first finalized at or after: RFC 3339 time, or YYYY-MM-DD"},
	{"finalized-to", "finalizedTo", "only orders first finalized before: RFC 3339 time, or YYYY-MM-DD"},
	{"reversed-from", "reversedFrom", "only orders paid and first cancelled after the payment at or after (the daily totals' reversed): RFC 3339 time, or YYYY-MM-DD"},
	{"reversed-to", "reversedTo", "only orders reversed before: RFC 3339 time, or YYYY-MM-DD"},
	{"tz", "tz", "IANA time zone the dates of the ranges are read in (default UTC)"},
	{"currency", "currency", "only orders in this currency (ISO 4217 code)"},
	{"min-total", "minTotal", "only orders whose total is at least this amount"},
	{"max-total", "maxTotal", "only orders whose total is at most this amount"},
	{"sort", "sort", "created_desc (default), created_asc, paid_desc, paid_asc, total_desc or total_asc"},
	{"cursor", "cursor", "continue a listing where the previous page ended (its next-page cursor)"},
}

// orderFilterFlags are the flags that select orders, shared by orders list
// and orders export so that both select alike: the fields of an
// ordersync.OrderQuery in kebab case (orderListFlags), and the account.
type orderFilterFlags struct {
	query   ordersync.OrderQuery
	account string
}

// addOrderFilterFlags adds the filter flags to fs, but those named in except.
func addOrderFilterFlags(fs *pflag.FlagSet, except ...string) *orderFilterFlags {
	ff := &orderFilterFlags{}
	for _, f := range orderListFlags {
		if !slices.Contains(except, f.flag) {
			fs.StringVar(ff.query.Param(f.param), f.flag, "", f.usage)
		}
	}
	fs.StringSliceVar(&ff.query.Statuses, "status", nil, "only these statuses: PENDING, PAID, CANCELLED, FINALIZED, or collected (PAID and FINALIZED: paid and not reversed); comma-separated or repeated")
	fs.StringVar(&ff.account, "account", ordersync.DefaultAccount, "the store (merchant account), or '*' for every store")
	return ff
}

// filter reads the flags, with the page page (limit, offset, count), through
// the domain's one parser; a refusal names each flag, those of the page by
// pageFlags (parameter → flag).
func (ff *orderFilterFlags) filter(page func(*ordersync.OrderQuery), pageFlags map[string]string) (ordersync.OrderFilter, error) {
	q := ff.query
	if page != nil {
		page(&q)
	}
	filter, err := ordersync.ParseOrderQuery(q, time.Now())
	var qe *ordersync.QueryError
	if errors.As(err, &qe) {
		return ordersync.OrderFilter{}, flagErrors(qe, pageFlags)
	}
	if err != nil {
		return ordersync.OrderFilter{}, err
	}
	return filter, nil
}

// store sets the filter's store from --account, as the configuration
// serves them (an unknown one is an error naming the known ones), and
// returns the choice.
func (ff *orderFilterFlags) store(l *local, filter *ordersync.OrderFilter) (api.StoreChoice, error) {
	choice, err := l.chooseStore(ff.account, true)
	filter.Account = choice.Account
	return choice, err
}

// flagErrors is a refused query in the CLI's terms: each parameter named
// by its flag.
func flagErrors(qe *ordersync.QueryError, extra map[string]string) error {
	flagOf := map[string]string{"status": "status"}
	maps.Copy(flagOf, extra)
	for _, f := range orderListFlags {
		flagOf[f.param] = f.flag
	}
	var msgs []string
	for _, p := range ordersync.OrderQueryParams {
		for _, m := range qe.Fields[p] {
			name := flagOf[p]
			if name == "" {
				name = p
			}
			msgs = append(msgs, "--"+name+": "+m)
		}
	}
	return errors.New(strings.Join(msgs, "\n"))
}
