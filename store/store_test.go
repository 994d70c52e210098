package store

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ordersync/ordersync"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url     string
		dialect string
		path    string
		uri     bool
	}{
		{"/var/lib/ordersync/mirror.db", DialectSQLite, "/var/lib/ordersync/mirror.db", false},
		{"mirror.db", DialectSQLite, "mirror.db", false},
		{"sqlite:/data/mirror.db", DialectSQLite, "/data/mirror.db", false},
		{"sqlite:///data/mirror.db", DialectSQLite, "/data/mirror.db", false},
		{"file:/data/mirror.db?cache=private", DialectSQLite, "/data/mirror.db", true},
		{"postgres://u:p@db:5432/ordersync?sslmode=disable", DialectPostgres, "", false},
		{"postgresql://db/ordersync", DialectPostgres, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := parseURL(tt.url)
			if err != nil {
				t.Fatalf("parseURL: %v", err)
			}
			if got.dialect != tt.dialect || got.path != tt.path || got.uri != tt.uri {
				t.Errorf("parseURL = dialect %q path %q uri %v, want %q %q %v", got.dialect, got.path, got.uri, tt.dialect, tt.path, tt.uri)
			}
		})
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"empty URL", Config{}},
		{"in-memory", Config{URL: ":memory:"}},
		{"memory mode", Config{URL: "file:x?mode=memory"}},
		{"unknown scheme", Config{URL: "mysql://localhost/db"}},
		{"negative MaxOpenConns", Config{URL: dir + "/a.db", MaxOpenConns: -1}},
		{"MaxIdleConns above MaxOpenConns", Config{URL: dir + "/b.db", MaxOpenConns: 2, MaxIdleConns: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Open(context.Background(), tt.cfg)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded, want an error")
			}
		})
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		for i := range 2 {
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate again (%d): %v", i, err)
			}
		}
		var applied int
		if err := db.read.Get(&applied, `SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0`); err != nil {
			t.Fatalf("count applied migrations: %v", err)
		}
		entries, err := migrations.ReadDir("migrations/" + db.Dialect())
		if err != nil {
			t.Fatal(err)
		}
		if applied != len(entries) {
			t.Errorf("%d migrations recorded, want %d (one per file, once)", applied, len(entries))
		}
		// The data survives a second Open, with and without migrating.
		seq, err := db.AllocateFetchSeq(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		noMigrate := false
		db2, err := Open(ctx, Config{URL: url, Migrate: &noMigrate})
		if err != nil {
			t.Fatalf("Open without migrating: %v", err)
		}
		defer db2.Close()
		next, err := db2.AllocateFetchSeq(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if next != seq+5 {
			t.Errorf("AllocateFetchSeq after reopen = %d, want %d", next, seq+5)
		}
	})
}

func TestConcurrentOpen(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		const n = 4
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			dbs  []*DB
			errs []error
		)
		for range n {
			wg.Go(func() {
				db, err := Open(context.Background(), Config{URL: url})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				dbs = append(dbs, db)
			})
		}
		wg.Wait()
		for _, db := range dbs {
			t.Cleanup(func() { db.Close() })
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
		// Every handle works on the one schema.
		seen := map[int64]bool{}
		for _, db := range dbs {
			seq, err := db.AllocateFetchSeq(context.Background(), 1)
			if err != nil {
				t.Fatalf("AllocateFetchSeq: %v", err)
			}
			seen[seq] = true
		}
		if len(seen) != n {
			t.Errorf("%d distinct sequence numbers from %d handles, want %d", len(seen), n, n)
		}
	})
}

func TestErrorTranslation(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		notFound := []struct {
			name string
			call func() error
		}{
			{"FindOrderByCode", func() error { _, err := db.FindOrderByCode(ctx, "default", "nope"); return err }},
			{"FindDeadLetter", func() error { _, err := db.FindDeadLetter(ctx, 424242); return err }},
			{"MarkDeadLetterReplayed", func() error { return db.MarkDeadLetterReplayed(ctx, 424242, testNow) }},
			{"ResolveOrderCode by id", func() error {
				_, err := db.ResolveOrderCode(ctx, ordersync.OrderRef{Account: "default", ID: "1"})
				return err
			}},
			{"ResolveOrderCode by reference", func() error {
				_, err := db.ResolveOrderCode(ctx, ordersync.OrderRef{Account: "default", Reference: "r"})
				return err
			}},
		}
		for _, tt := range notFound {
			if err := tt.call(); !errors.Is(err, ordersync.ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", tt.name, err)
			}
		}

		// A real unique violation of each dialect becomes ErrConflict.
		insert := db.rebind(`INSERT INTO event_log (msg_id, account, received_at) VALUES (?, ?, ?)`)
		if _, err := db.write.Exec(insert, "m1", "default", testNow); err != nil {
			t.Fatal(err)
		}
		_, err := db.write.Exec(insert, "m1", "default", testNow)
		if err == nil {
			t.Fatal("duplicate msg_id inserted")
		}
		if got := translate("insert event", err); !errors.Is(got, ordersync.ErrConflict) {
			t.Errorf("translate(unique violation) = %v, want ErrConflict", got)
		}
	})
}

func TestAllocateFetchSeqConcurrent(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		// Two handles, as two processes would have.
		dbs := []*DB{openDB(t, url), openDB(t, url)}
		const workers, rounds = 6, 40
		type span struct{ first, n int64 }
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			spans []span
			errs  []error
		)
		for w := range workers {
			wg.Go(func() {
				db := dbs[w%len(dbs)]
				var last int64
				for r := range rounds {
					n := int64(1 + (w+r)%5)
					first, err := db.AllocateFetchSeq(ctx, int(n))
					mu.Lock()
					if err == nil && first <= last {
						err = errors.New("sequence went backwards within one caller")
					}
					if err != nil {
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					spans = append(spans, span{first, n})
					mu.Unlock()
					last = first + n - 1
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		used := map[int64]bool{}
		var total int64
		for _, s := range spans {
			for v := s.first; v < s.first+s.n; v++ {
				if used[v] {
					t.Fatalf("sequence number %d handed out twice", v)
				}
				used[v] = true
			}
			total += s.n
		}
		// Numbers are consecutive from 1: nothing lost, nothing shared.
		for v := int64(1); v <= total; v++ {
			if !used[v] {
				t.Fatalf("sequence number %d never handed out (total %d)", v, total)
			}
		}
		if _, err := dbs[0].AllocateFetchSeq(ctx, 0); err == nil {
			t.Error("AllocateFetchSeq(0) succeeded, want an error")
		}
	})
}

// TestSQLiteReadCache: the read connections get the larger page cache, and
// a cache_size in the URL wins.
func TestSQLiteReadCache(t *testing.T) {
	for _, c := range []struct {
		url  func(path string) string
		want int
	}{
		{func(path string) string { return "sqlite:" + path }, -sqliteReadCacheKiB},
		{func(path string) string { return "file:" + path + "?_cache_size=-4096" }, -4096},
	} {
		db := openDB(t, c.url(filepath.Join(t.TempDir(), "mirror.db")))
		var got int
		if err := db.read.Get(&got, `PRAGMA cache_size`); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("read cache_size %d, want %d", got, c.want)
		}
	}
}
