package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/ordersync/ordersync"
)

// searchPlan is how a search matches phone numbers and buyer names,
// decided by planSearch in the page's read transaction.
type searchPlan struct {
	// phones are the phone keys the search looks for (planPhoneSearch).
	phones []string
	// wholeReference: the search's beginning of a reference is too common
	// (broadReferencePrefix), so it matches whole references only.
	wholeReference bool
	words          []string
	// none: no word of the buyer names of the account (or of any store)
	// begins with one of the search's words, so only the identifiers can
	// find an order.
	none bool
	// exact is the one word of the account's buyer names that begins with
	// the first word, "" when there are several (or the account is not
	// known). Then no order is found twice by its name (its words are
	// distinct), and the name's rows are added to the identifiers' without
	// the de-duplication that would cost a pass over every one of them.
	exact string
	// later holds, on PostgreSQL when exact is set, the one word of the
	// account's buyer names that begins with each later word of the
	// search, "" where there are several or none.
	later []string
	// stores are the accounts the mirror holds, when the listing covers
	// every store: the identifiers', words' and sorts' indexes begin with
	// the account, so each is sought once per store, where without one it
	// would be read whole (SQLite keeps no statistics for a skip-scan,
	// PostgreSQL 15 has none).
	stores []string
}

// storeCondition is the condition on a row's account column col that it
// belongs to account, or with account "" to one of stores (none when
// stores is empty too), with its arguments.
func storeCondition(col, account string, stores []string) (string, []any) {
	if account != "" {
		return " AND " + col + " = ?", []any{account}
	}
	if len(stores) == 0 {
		return "", nil
	}
	args := make([]any, len(stores))
	for i, s := range stores {
		args[i] = s
	}
	return " AND " + col + " IN (" + placeholders(len(stores)) + ")", args
}

// mirrorStores reads the accounts the mirror's orders belong to: one seek
// per account in an index that begins with it.
func (db *DB) mirrorStores(ctx context.Context, tx *sqlx.Tx) ([]string, error) {
	var stores []string
	err := tx.SelectContext(ctx, &stores, `WITH RECURSIVE a (account) AS (
    SELECT MIN(account) FROM orders
    UNION ALL
    SELECT (SELECT MIN(account) FROM orders WHERE account > a.account) FROM a WHERE a.account IS NOT NULL)
SELECT account FROM a WHERE account IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("read the mirror's stores: %w", err)
	}
	return stores, nil
}

// tokenMatch is the condition on a word's column that matches a prefix,
// and the pattern it takes for a word.
func (db *DB) tokenMatch(column string) (string, func(string) string) {
	if db.dialect == DialectPostgres {
		// The "C" collation makes LIKE 'prefix%' a range of the index.
		return column + " LIKE ?", func(w string) string { return w + "%" }
	}
	return column + " GLOB ?", func(w string) string { return w + "*" }
}

// planSearch looks up, in tx, the phone keys of the search, and the
// first two words of the account's buyer names that begin with the
// search's first word: two seeks in the words' index. Words hold letters
// and digits only, so a prefix needs no escaping in a pattern.
func (db *DB) planSearch(ctx context.Context, tx *sqlx.Tx, f ordersync.OrderFilter) (searchPlan, error) {
	q := strings.TrimSpace(f.Q)
	names := searchPlan{words: ordersync.NameTokens(q)}
	var err error
	if f.Account == "" {
		if names.stores, err = db.mirrorStores(ctx, tx); err != nil {
			return names, err
		}
	}
	if q == "" {
		return names, nil
	}
	if names.phones, err = db.planPhoneSearch(ctx, tx, f.Account, q); err != nil {
		return names, err
	}
	if names.wholeReference, err = db.broadReferencePrefix(ctx, tx, f.Account, names.stores, q); err != nil {
		return names, err
	}
	if len(names.words) == 0 {
		return names, nil
	}
	match, pattern := db.tokenMatch("token")
	next := func(account, word, cmp, from string) (string, error) {
		var token []string
		err := tx.SelectContext(ctx, &token, db.rebind(`SELECT token FROM order_name_tokens WHERE account = ? AND token `+cmp+` ? AND `+match+
			` ORDER BY token LIMIT 1`), account, from, pattern(word))
		if err != nil || len(token) == 0 {
			return "", err
		}
		return token[0], nil
	}
	if f.Account == "" {
		// Every store's search: a word that no buyer name of any store
		// has a word beginning with (an email's domain, a number) finds
		// no order by its name, where testing each order of the other
		// words for it would read every one of them.
		for _, w := range names.words {
			some := false
			for _, s := range names.stores {
				first, err := next(s, w, ">=", w)
				if err != nil {
					return names, err
				}
				if some = first != ""; some {
					break
				}
			}
			if !some {
				names.none = true
				break
			}
		}
		return names, nil
	}
	// only is the one word of the names that begins with word, "" when
	// there are none or several.
	only := func(word string) (string, bool, error) {
		first, err := next(f.Account, word, ">=", word)
		if err != nil || first == "" {
			return "", false, err
		}
		second, err := next(f.Account, word, ">", first)
		if err != nil || second != "" {
			return "", true, err
		}
		return first, true, nil
	}
	exact, some, err := only(names.words[0])
	if err != nil || !some {
		names.none = err == nil
		return names, err
	}
	var later []string
	for _, w := range names.words[1:] {
		// A later word that no name has a word beginning with finds no
		// order by its name either.
		word, some, err := only(w)
		if err != nil || !some {
			names.none = err == nil
			return names, err
		}
		later = append(later, word)
	}
	names.exact = exact
	if exact != "" && db.dialect == DialectPostgres {
		names.later = later
	}
	return names, nil
}

// searchFound is the row ids (found_id) and sort values (k, of col) of the
// orders of one part that a search for q finds, with the filter's
// conditions where: those an identifier finds (identifierMatches), and
// those whose buyer name has, for every word of q, a word that begins
// with it. A union of index lookups, the name's from order_name_tokens
// alone. With rows > 0, only the first rows of the name's in order (the
// listing's ORDER BY terms over found_id and k) are read. valued says the
// part is the one with the sort's value (col IS NOT NULL).
func (db *DB) searchFound(account, q string, names searchPlan, col string, valued bool, where []string, whereArgs []any, part orderPart,
	order string, rows int) (string, []any) {
	var (
		parts []string
		args  []any
	)
	pc, pa := part("id")
	acct, acctArgs := storeCondition("account", account, names.stores)
	match, pattern := db.tokenMatch("token")
	var (
		byName     []string
		byNameArgs []any
	)
	if names.exact != "" {
		// An order its identifier finds is left to the name's rows when its
		// name matches too, so that it is found once without the union's
		// de-duplication of the name's rows.
		for i, w := range names.words {
			m, a := match, pattern(w)
			if i == 0 {
				m, a = "token = ?", names.exact
			}
			byName = append(byName, `EXISTS (SELECT 1 FROM order_name_tokens x WHERE x.order_row = orders.id AND x.`+m+`)`)
			byNameArgs = append(byNameArgs, a)
		}
		byName = []string{"NOT (" + strings.Join(byName, " AND ") + ")"}
	}
	for _, m := range identifierMatches(q, names.phones, names.wholeReference) {
		// The identifier's index finds the order before the filter's
		// conditions are tested: given them in one WHERE, SQLite would
		// rather walk a range the filter names. "<> ''" lets SQLite use the
		// partial indexes, which it cannot know a parameter satisfies.
		conds := slices.Concat([]string{"raw_document IS NOT NULL"}, where, pc, byName)
		parts = append(parts, `SELECT id AS found_id, `+col+` AS k FROM (SELECT id AS ident_id FROM orders WHERE `+m.cond+` AND `+m.column+` <> ''`+acct+
			`) AS ident`+db.crossJoin()+`orders ON orders.id = ident.ident_id WHERE `+strings.Join(conds, " AND "))
		args = slices.Concat(args, m.args, acctArgs, whereArgs, pa, byNameArgs)
	}
	found := strings.Join(parts, " UNION ")
	if len(names.words) == 0 || names.none {
		return found, args
	}
	// The words' rows hold only fetched orders, and the filter's columns by
	// the same names as orders: the conditions read alike.
	conds := []string{"t0." + match}
	args = append(args, pattern(names.words[0]))
	if names.exact != "" {
		conds[0], args[len(args)-1] = "t0.token = ?", names.exact
	}
	if account == "" {
		if c, a := storeCondition("t0.account", "", names.stores); c != "" {
			conds = append([]string{strings.TrimPrefix(c, " AND ")}, conds...)
			args = slices.Concat(args[:len(args)-1], a, args[len(args)-1:])
		}
	}
	for i, w := range names.words[1:] {
		if valued && col == "created_at" && account != "" && i < len(names.later) && names.later[i] != "" {
			// A later word that is one word of the names, in the created
			// sort: its rows in the words' created index are in the
			// page's order too, so PostgreSQL merges the two walks on
			// (created time, row) and stops with the page, where a set of
			// the word's orders would read every one of its rows (15,000
			// for a common surname). The words' rows repeat their order's
			// created time, and the valued part has one.
			t := fmt.Sprintf("t%d", i+1)
			conds = append(conds, `EXISTS (SELECT 1 FROM order_name_tokens `+t+` WHERE `+t+`.account = t0.account AND `+t+`.token = ? AND `+
				t+`.created_at = t0.created_at AND `+t+`.order_row = t0.order_row)`)
			args = append(args, names.later[i])
			continue
		}
		if account != "" {
			// The other words' orders, each read once from the index and
			// kept in a set (SQLite) or hashed (PostgreSQL), rather than a
			// lookup of each word for every row of the first. The unary +
			// keeps SQLite from reading the set's orders one by one in the
			// first word's index instead.
			conds = append(conds, db.noIndex("t0.order_row")+` IN (SELECT order_row FROM order_name_tokens WHERE account = ? AND `+match+`)`)
			args = append(args, account, pattern(w))
			continue
		}
		t := fmt.Sprintf("t%d", i+1)
		conds = append(conds, `EXISTS (SELECT 1 FROM order_name_tokens `+t+` WHERE `+t+`.order_row = t0.order_row AND `+t+`.`+match+`)`)
		args = append(args, pattern(w))
	}
	tc, ta := part("order_row")
	conds = slices.Concat(conds, where, tc)
	args = append(append(args, whereArgs...), ta...)
	byWords := `SELECT order_row AS found_id, ` + col + ` AS k FROM order_name_tokens t0 WHERE ` + strings.Join(conds, " AND ")
	if names.exact == "" {
		return found + " UNION " + byWords, args
	}
	if rows > 0 {
		// The page holds at most the first rows of the word's orders: an
		// index of the word's rows in the page's order (PostgreSQL's by
		// created time) is then read until the page is full, where a
		// union's sort would read every one of them.
		byWords = `SELECT found_id, k FROM (` + byWords + ` ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(rows) + `) AS first_found`
	}
	return found + " UNION ALL " + byWords, args
}
