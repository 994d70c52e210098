package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// identifierMatch is how a search finds orders by one identifier: a
// condition on a column that begins an index after the account, and its
// arguments. column <> ” is added to it, which lets SQLite use the
// partial indexes (it cannot know that a parameter is not empty).
type identifierMatch struct {
	column string
	cond   string
	args   []any
}

// identifierMatches are the identifier lookups of a search for q (see
// ordersync.OrderFilter.Q): the code, id and authorization code exactly,
// the email's key, the reference key's range of q's prefix (its whole key
// when wholeReference), the phone keys phones lists, and the total when q
// is an amount.
func identifierMatches(q string, phones []string, wholeReference bool) []identifierMatch {
	key := ordersync.IdentifierKey(q)
	out := []identifierMatch{
		{"order_code", "order_code = ?", []any{q}},
		{"order_id", "order_id = ?", []any{q}},
		{"payment_authorization_code", "payment_authorization_code = ?", []any{q}},
		{"buyer_email_key", "buyer_email_key = ?", []any{key}},
		referenceMatch(key, wholeReference),
	}
	if len(phones) > 0 {
		args := make([]any, len(phones))
		for i, p := range phones {
			args[i] = p
		}
		out = append(out, identifierMatch{"buyer_phone_key", "buyer_phone_key IN (" + placeholders(len(phones)) + ")", args})
	}
	if a, ok := ordersync.SearchAmount(q); ok {
		out = append(out, identifierMatch{"total_key", "total_key = ?", []any{totalKey(a)}})
	}
	return out
}

// referenceMatch is the lookup of the references that begin with key, or
// that are key when whole.
func referenceMatch(key string, whole bool) identifierMatch {
	if end, ok := prefixEnd(key); ok && !whole {
		return identifierMatch{"order_reference_key", "order_reference_key >= ? AND order_reference_key < ?", []any{key, end}}
	}
	return identifierMatch{"order_reference_key", "order_reference_key = ?", []any{key}}
}

// maxReferencePrefixOrders is how many orders a reference's beginning may
// find: the listing sorts what a search finds, and a beginning that
// every reference shares ("INV-") would have it read them all. A search
// whose beginning finds more matches whole references only.
const maxReferencePrefixOrders = 2000

// broadReferencePrefix reports, in tx, whether the references that begin
// with q's key are more than maxReferencePrefixOrders of the account's
// orders (of every one of stores' when account is ""): a count of at most
// one more than that in the key's index.
func (db *DB) broadReferencePrefix(ctx context.Context, tx *sqlx.Tx, account string, stores []string, q string) (bool, error) {
	m := referenceMatch(ordersync.IdentifierKey(q), false)
	if len(m.args) < 2 {
		return false, nil
	}
	acct, acctArgs := storeCondition("account", account, stores)
	args := slices.Concat(m.args, acctArgs)
	var n int
	err := tx.GetContext(ctx, &n, db.rebind(`SELECT COUNT(*) FROM (SELECT 1 FROM orders WHERE `+m.cond+` AND order_reference_key <> ''`+acct+
		` LIMIT `+strconv.Itoa(maxReferencePrefixOrders+1)+`) AS found`), args...)
	return n > maxReferencePrefixOrders, err
}

// prefixEnd is the least string after every string that begins with p, in
// the order of code points (which UTF-8 bytes compare in): p with its last
// character that can be incremented incremented, and what follows it
// dropped. False when there is none (p empty, or only the last code point).
func prefixEnd(p string) (string, bool) {
	r := []rune(p)
	for i := len(r) - 1; i >= 0; i-- {
		next := r[i] + 1
		if next >= 0xD800 && next <= 0xDFFF { // surrogates are not characters
			next = 0xE000
		}
		if next <= utf8.MaxRune {
			r[i] = next
			return string(r[:i+1]), true
		}
	}
	return "", false
}

// planPhoneSearch is the phone keys a search for q looks for in the
// account's orders (ordersync.PhoneSearchKeys), in tx: a number without an
// international prefix is read in the country of the account's store, as
// its latest order names it (one row from the newest end of the table), or
// in every country PhoneKey knows when the search spans accounts or no
// order names one.
func (db *DB) planPhoneSearch(ctx context.Context, tx *sqlx.Tx, account, q string) ([]string, error) {
	if len(ordersync.PhoneSearchKeys(q, nil)) == 0 {
		return nil, nil
	}
	countries := ordersync.PhoneCountries()
	if account != "" {
		var country string
		err := tx.GetContext(ctx, &country, db.rebind(`SELECT store_country_code FROM orders
WHERE account = ? AND store_country_code <> '' ORDER BY id DESC LIMIT 1`), account)
		switch {
		case err == nil:
			countries = []string{country}
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
	}
	return ordersync.PhoneSearchKeys(q, countries), nil
}

// backfillKeys writes the identifier keys of orders mirrored before
// migration 00023; PostgreSQL reads VALUES parameters as text.
var backfillKeys = rowsSQL{prefix: `UPDATE orders SET buyer_email_key = v.column2, buyer_phone_key = v.column3, order_reference_key = v.column4 FROM (VALUES `,
	cols: 4, suffix: `) AS v WHERE orders.id = CAST(v.column1 AS BIGINT)`}

// backfillIdentifierKeys fills the identifier keys (buyer_email_key,
// buyer_phone_key, order_reference_key) of orders mirrored before
// migration 00023, when its mark says they are pending, a thousand orders
// per transaction, then clears the mark. It runs under the migration lock.
func (db *DB) backfillIdentifierKeys(ctx context.Context) error {
	type row struct {
		ID        int64  `db:"id"`
		Email     string `db:"buyer_email"`
		Phone     string `db:"buyer_phone"`
		Reference string `db:"order_reference"`
		Country   string `db:"store_country_code"`
	}
	return db.backfill(ctx, "identifier keys", "identifier_backfill", func(tx *sqlx.Tx, after int64, limit int) (int64, int, error) {
		var rows []row
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT id, buyer_email, buyer_phone, order_reference, store_country_code FROM orders
WHERE id > ? AND raw_document IS NOT NULL ORDER BY id LIMIT ?`), after, limit); err != nil || len(rows) == 0 {
			return after, 0, err
		}
		var keys [][]any
		for _, r := range rows {
			k := []any{strconv.FormatInt(r.ID, 10), ordersync.IdentifierKey(r.Email), ordersync.PhoneKey(r.Phone, r.Country), ordersync.IdentifierKey(r.Reference)}
			if slices.ContainsFunc(k[1:], func(v any) bool { return v != "" }) {
				keys = append(keys, k)
			}
		}
		return rows[len(rows)-1].ID, len(rows), db.execRows(ctx, tx, backfillKeys, keys)
	})
}
