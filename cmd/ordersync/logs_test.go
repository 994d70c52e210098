package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestLogLinesJSONWithUniqueKeys runs the whole service with serve's JSON
// logger at debug level, drives orders, a refused webhook and admin
// requests through it, stops it, and parses every line it logged: each
// must be one JSON object with no key twice at any depth (strict log
// stores refuse those), durations in seconds, and the lines of a request
// must carry the id a trusted proxy gave it, which its answer echoes.
func TestLogLinesJSONWithUniqueKeys(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	logger, err := newLogger(&logs, new(slog.LevelVar), "debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	st, err := app.StartStack(context.Background(), app.StackOptions{DataDir: t.TempDir(), Logger: logger, Seed: 5,
		Configure: func(c *app.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} }})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			st.Close()
		}
	}()
	ctx := context.Background()
	codes, err := createDemoOrders(ctx, st.Program.AdminURL(), ordersync.DefaultAccount, 3, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sim.Pay(codes[0], ordersync.Buyer{Name: "Buyer", Email: "buyer@example.com"}); err != nil {
		t.Fatal(err)
	}
	waitMirrorMatches(t, st, 10*time.Second)

	// A webhook with a bad signature, and an admin request, each through a
	// trusted proxy that names the request.
	send := func(method, url, id string, body io.Reader) {
		t.Helper()
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Request-Id", id)
		req.Header.Set("X-H4B-Hmac-Sha256", "AAAA")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Request-Id"); got != id {
			t.Errorf("%s %s answered X-Request-Id %q, want the proxy's %q", method, url, got, id)
		}
	}
	send(http.MethodPost, st.Program.WebhookURL(), "proxy-webhook-1", strings.NewReader(`{"orderId":"1","type":"Created"}`))
	send(http.MethodGet, st.Program.AdminURL()+"/v1/orders?limit=1", "proxy-admin-1", nil)

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true

	lines := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	if len(lines) < 10 {
		t.Fatalf("only %d log lines: %q", len(lines), lines)
	}
	byRequest := map[string][]map[string]any{}
	var settings bool
	for i, line := range lines {
		if err := uniqueKeys(line); err != nil {
			t.Errorf("line %d: %v: %s", i+1, err, line)
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("line %d: %v", i+1, err)
			continue
		}
		if id, ok := rec["request_id"].(string); ok {
			byRequest[id] = append(byRequest[id], rec)
		}
		if rec["msg"] == "settings in effect" {
			settings = true
		}
	}
	if !settings {
		t.Error("no line logs the settings in effect at start")
	}
	rejected := false
	for _, rec := range byRequest["proxy-webhook-1"] {
		rejected = rejected || rec["msg"] == "webhook rejected"
	}
	if !rejected {
		t.Errorf("the refused webhook's lines %v do not include its rejection", byRequest["proxy-webhook-1"])
	}
	for _, id := range []string{"proxy-webhook-1", "proxy-admin-1"} {
		found := false
		for _, rec := range byRequest[id] {
			if rec["msg"] != "http request" {
				continue
			}
			found = true
			// Seconds: a loopback request takes well under one; integer
			// nanoseconds would be thousands or more.
			if d, ok := rec["duration"].(float64); !ok || d <= 0 || d >= 10 {
				t.Errorf("request %s: duration %v, want seconds as a number", id, rec["duration"])
			}
		}
		if !found {
			t.Errorf("no request line carries request_id %s", id)
		}
	}
}

// uniqueKeys checks that line is one JSON object whose objects, at any
// depth, name no key twice, reading it as a token stream (a map would keep
// the last of two keys silently).
func uniqueKeys(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	if err := rest(dec, tok); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// rest reads what follows tok, the first token of a value, to the value's
// end, and fails on a key an object names twice.
func rest(dec *json.Decoder, tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		if tok == json.Delim('{') {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			if seen[key.(string)] {
				return fmt.Errorf("key %q twice", key)
			}
			seen[key.(string)] = true
		}
		next, err := dec.Token()
		if err != nil {
			return err
		}
		if err := rest(dec, next); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing delimiter
	return err
}

func TestUniqueKeys(t *testing.T) {
	for line, ok := range map[string]bool{
		`{"a":1,"b":{"c":[1,{"d":2}]}}`: true,
		`{"a":1,"a":2}`:                 false,
		`{"a":{"b":1,"b":2}}`:           false,
		`{"a":[{"b":1,"b":2}]}`:         false,
		`[1]`:                           false,
		`{"a":1} {"b":2}`:               false,
		`{"a":`:                         false,
	} {
		if err := uniqueKeys(line); (err == nil) != ok {
			t.Errorf("uniqueKeys(%s) = %v, want ok %v", line, err, ok)
		}
	}
}
