package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/app"
)

func newEndpointsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "Manage the HTTP endpoints that receive order events (asks the running service)",
		Long: `endpoints manages, through the running service's admin API, the HTTP
endpoints that receive order.paid and order.status_changed as signed
Standard Webhooks. Changes take effect without a restart. listen runs a
small verifying receiver for trying it out.`,
	}
	cmd.AddCommand(newEndpointsAddCommand(), newEndpointsListCommand(), newEndpointsShowCommand(), newEndpointsUpdateCommand(),
		newEndpointsRemoveCommand(), newEndpointsRotateCommand(), newEndpointsTestCommand(), newEndpointsReplayCommand(),
		newEndpointsDeadLettersCommand(), newEndpointsReplayDeadLetterCommand(), newEndpointsListenCommand())
	return cmd
}

// adminFlags are the flags of a command that asks the running service:
// its admin API and the token to send default to admin_listen and the
// first operator token of admin_tokens, read from the same file and environment as serve.
type adminFlags struct {
	config     *app.ConfigFlags
	url, token string
}

func addAdminFlags(cmd *cobra.Command) *adminFlags {
	f := &adminFlags{config: app.AddConfigFlags(cmd.Flags(), app.ScopeAdmin)}
	cmd.Flags().StringVar(&f.url, "admin-url", "", "the running service's admin API (default: http:// and admin_listen)")
	cmd.Flags().StringVar(&f.token, "token", "", "the bearer token to send (default: the first operator's of admin_tokens, ORDERSYNC_ADMIN_TOKEN)")
	return f
}

// client is the admin API the flags name.
func (f *adminFlags) client() (*admin.Client, error) {
	cfg, err := f.config.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	c := &admin.Client{BaseURL: f.url, Token: f.token}
	if c.BaseURL == "" {
		c.BaseURL = adminBaseURL(cfg.AdminListen)
	}
	if t, ok := ordersync.FirstOperator(cfg.AdminTokens); c.Token == "" && ok {
		c.Token = t.Token
	}
	return c, nil
}

// call sends one admin API request and decodes a 2xx answer into out.
func (f *adminFlags) call(ctx context.Context, method, path string, body, out any) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	err = c.Do(ctx, method, path, body, out)
	if errors.Is(err, admin.ErrUnreachable) {
		return fmt.Errorf("%w (is `ordersync serve` running there? its admin_listen decides where, or give --admin-url)", err)
	}
	return err
}

func newEndpointsAddCommand() *cobra.Command {
	var p api.EndpointParamsJSON
	cmd := &cobra.Command{Use: "add --url URL [--event E]...", Short: "Add an endpoint; prints its id and secret", Args: cobra.NoArgs}
	af := addAdminFlags(cmd)
	cmd.Flags().StringVar(&p.URL, "url", "", "where to POST events (http or https)")
	cmd.Flags().StringSliceVar(&p.Events, "event", []string{string(ordersync.HookOrderPaid)}, "events to receive: order.paid, order.status_changed")
	cmd.Flags().StringVar(&p.Description, "description", "", "what the endpoint is")
	cmd.Flags().StringVar(&p.Secret, "secret", "", "signing secret (whsec_…); generated when empty")
	cmd.Flags().Float64Var(&p.RatePerSecond, "rate", 0, "at most this many requests per second (0: no cap)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var ep api.EndpointJSON
		if err := af.call(cmd.Context(), http.MethodPost, "/v1/endpoints", p, &ep); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s added\nsecret: %s\n(keep the secret: it is shown only now)\n", ep.ID, ep.Secret)
		return nil
	}
	return cmd
}

func newEndpointsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "list", Short: "List endpoints", Args: cobra.NoArgs}
	af := addAdminFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var out struct {
			Endpoints []api.EndpointJSON `json:"endpoints"`
			Count     int                `json:"count"`
		}
		if err := af.call(cmd.Context(), http.MethodGet, "/v1/endpoints", nil, &out); err != nil {
			return err
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), out)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSOURCE\tSTATE\tEVENTS\tURL\tDESCRIPTION")
		for _, ep := range out.Endpoints {
			state := "enabled"
			if ep.Disabled {
				state = "disabled (" + ep.DisabledReason + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ep.ID, ep.Source, state, strings.Join(ep.Events, ","), ep.URL, dash(ep.Description))
		}
		_ = tw.Flush()
		fmt.Fprintln(cmd.OutOrStdout(), plural(out.Count, "endpoint"))
		return nil
	}
	return cmd
}

func newEndpointsShowCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "show ID", Short: "Show one endpoint", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the admin API's shape) instead of a table")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var ep api.EndpointJSON
		if err := af.call(cmd.Context(), http.MethodGet, "/v1/endpoints/"+args[0], nil, &ep); err != nil {
			return err
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), ep)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, dash(v)) }
		row("Endpoint", ep.ID)
		row("URL", ep.URL)
		row("Events", strings.Join(ep.Events, ", "))
		row("Description", ep.Description)
		row("Source", ep.Source)
		state := "enabled"
		if ep.Disabled {
			state = "disabled (" + ep.DisabledReason + ")"
		}
		row("State", state)
		if ep.RatePerSecond > 0 {
			row("Rate", fmt.Sprintf("%g requests/s at most", ep.RatePerSecond))
		}
		if ep.PreviousSecretUntil != nil {
			row("Previous secret signs until", when(*ep.PreviousSecretUntil))
		}
		row("Created", when(ep.CreatedAt))
		row("Updated", when(ep.UpdatedAt))
		return tw.Flush()
	}
	return cmd
}

func newEndpointsUpdateCommand() *cobra.Command {
	var url, description string
	var events []string
	var enable, disable bool
	var rate float64
	cmd := &cobra.Command{Use: "update ID [--url U] [--event E]... [--description D] [--enable|--disable]", Short: "Change an endpoint", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.Flags().StringVar(&url, "url", "", "new URL")
	cmd.Flags().StringSliceVar(&events, "event", nil, "new events (replace the old ones)")
	cmd.Flags().StringVar(&description, "description", "", "new description")
	cmd.Flags().BoolVar(&enable, "enable", false, "enable it (as after a 410 was fixed)")
	cmd.Flags().BoolVar(&disable, "disable", false, "disable it: its events wait until it is enabled")
	cmd.Flags().Float64Var(&rate, "rate", 0, "at most this many requests per second (0: no cap)")
	cmd.MarkFlagsMutuallyExclusive("enable", "disable")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var u api.EndpointUpdateJSON
		if cmd.Flags().Changed("url") {
			u.URL = &url
		}
		if cmd.Flags().Changed("event") {
			u.Events = events
		}
		if cmd.Flags().Changed("description") {
			u.Description = &description
		}
		if enable || disable {
			u.Disabled = &disable
		}
		if cmd.Flags().Changed("rate") {
			u.RatePerSecond = &rate
		}
		var ep api.EndpointJSON
		if err := af.call(cmd.Context(), http.MethodPatch, "/v1/endpoints/"+args[0], u, &ep); err != nil {
			return err
		}
		return writeIndented(cmd.OutOrStdout(), ep)
	}
	return cmd
}

func newEndpointsRemoveCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "remove ID", Short: "Delete an endpoint and its consumer", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := af.call(cmd.Context(), http.MethodDelete, "/v1/endpoints/"+args[0], nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s removed\n", args[0])
		return nil
	}
	return cmd
}

func newEndpointsRotateCommand() *cobra.Command {
	var secret string
	cmd := &cobra.Command{Use: "rotate-secret ID", Short: "Give an endpoint a new secret; the old one keeps signing for the grace period", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.Flags().StringVar(&secret, "secret", "", "the new secret (whsec_…); generated when empty")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var ep api.EndpointJSON
		if err := af.call(cmd.Context(), http.MethodPost, "/v1/endpoints/"+args[0]+"/rotate-secret", api.RotateSecretJSON{Secret: secret}, &ep); err != nil {
			return err
		}
		until := "-"
		if ep.PreviousSecretUntil != nil {
			until = ep.PreviousSecretUntil.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "new secret: %s\nthe old secret signs too until %s\n", ep.Secret, until)
		return nil
	}
	return cmd
}

func newEndpointsTestCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "test ID", Short: "Send a signed ping and print the endpoint's answer", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var rep ordersync.DeliveryReport
		if err := af.call(cmd.Context(), http.MethodPost, "/v1/endpoints/"+args[0]+"/test", nil, &rep); err != nil {
			return err
		}
		if err := writeIndented(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
		if !rep.Delivered {
			return errors.New("the endpoint did not accept the ping")
		}
		return nil
	}
	return cmd
}

func newEndpointsReplayCommand() *cobra.Command {
	var since string
	cmd := &cobra.Command{Use: "replay ID --since T", Short: "Deliver again every event since T (RFC 3339, a date, or a duration back)", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.Flags().StringVar(&since, "since", "", "RFC 3339 time, YYYY-MM-DD, or a duration such as 24h")
	_ = cmd.MarkFlagRequired("since")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		t, err := ordersync.ParseSince(since, time.Now())
		if err != nil {
			return fmt.Errorf("--since: %w", err)
		}
		var out struct{ Queued int }
		if err := af.call(cmd.Context(), http.MethodPost, "/v1/endpoints/"+args[0]+"/replay", api.ReplayJSON{Since: t.UTC().Format(time.RFC3339)}, &out); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%d events queued for redelivery\n", out.Queued)
		return nil
	}
	return cmd
}

func newEndpointsListenCommand() *cobra.Command {
	var secret, addr string
	cmd := &cobra.Command{
		Use:   "listen --secret whsec_…",
		Short: "Run a small receiver that verifies deliveries and prints them (for trying it out)",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().StringVar(&secret, "secret", "", "the endpoint's secret")
	cmd.Flags().StringVar(&addr, "listen", "127.0.0.1:8088", "address to listen on")
	_ = cmd.MarkFlagRequired("secret")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := delivery.ValidateSecret(secret); err != nil {
			return fmt.Errorf("--secret: %w", err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		out := &lockedWriter{w: cmd.OutOrStdout()}
		fmt.Fprintf(out, "listening on http://%s/ — add it with: ordersync endpoints add --url http://%s/ --secret %s\n", ln.Addr(), ln.Addr(), secret)
		srv := &http.Server{Handler: listenHandler(secret, out), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			<-cmd.Context().Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	return cmd
}

// listenHandler verifies each delivery, prints one line for it and answers
// 204, or 401 when the signature does not verify.
func listenHandler(secret string, out io.Writer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		id := r.Header.Get(delivery.HeaderID)
		if err := delivery.Verify(secret, r.Header, body, 0); err != nil {
			fmt.Fprintf(out, "%s  %s  REJECTED: %v\n", time.Now().UTC().Format(time.RFC3339), id, err)
			http.Error(w, "signature", http.StatusUnauthorized)
			return
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				OrderCode    string          `json:"orderCode"`
				StatusChange map[string]any  `json:"statusChange"`
				Total        json.RawMessage `json:"total"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		line := fmt.Sprintf("%s  %s  %s  verified", time.Now().UTC().Format(time.RFC3339), id, ev.Type)
		if ev.Data.OrderCode != "" {
			from := ev.Data.StatusChange["from"]
			if from == nil {
				from = "new"
			}
			line += fmt.Sprintf("  order %s %v→%v total %s", ev.Data.OrderCode, from, ev.Data.StatusChange["to"], ev.Data.Total)
		}
		fmt.Fprintln(out, line)
		w.WriteHeader(http.StatusNoContent)
	})
}

// lockedWriter serialises the lines of concurrent requests.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newEndpointsDeadLettersCommand() *cobra.Command {
	var endpoint string
	var all, asJSON bool
	cmd := &cobra.Command{Use: "dead-letters [--endpoint ID]", Short: "List deliveries refused for good or out of retries", Args: cobra.NoArgs}
	af := addAdminFlags(cmd)
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "only this endpoint's")
	cmd.Flags().BoolVar(&all, "all", false, "include letters already replayed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		q := neturl.Values{}
		if endpoint != "" {
			q.Set("endpoint", endpoint)
		}
		if all {
			q.Set("include_replayed", "true")
		}
		var out struct {
			DeadLetters []api.DeliveryDeadLetterJSON `json:"deadLetters"`
			Count       int                          `json:"count"`
		}
		if err := af.call(cmd.Context(), http.MethodGet, "/v1/delivery-dead-letters?"+q.Encode(), nil, &out); err != nil {
			return err
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), out)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tENDPOINT\tEVENT\tORDER\tATTEMPTS\tSTATUS\tREPLAYED\tANSWER")
		for _, dl := range out.DeadLetters {
			answer := dl.LastBody
			if answer == "" {
				answer = dl.LastError
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", dl.ID, dl.CreatedAt.UTC().Format(time.RFC3339), dl.EndpointID, dl.Event,
				dash(dl.OrderCode), dl.Attempts, dl.LastStatus, dl.ReplayCount, ordersync.Clip(strings.Join(strings.Fields(answer), " "), 59))
		}
		_ = tw.Flush()
		fmt.Fprintf(cmd.OutOrStdout(), "%d delivery dead letters\n", out.Count)
		return nil
	}
	return cmd
}

func newEndpointsReplayDeadLetterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "replay-dead-letter ID", Short: "Send a delivery dead letter again (same webhook-id and body)", Args: cobra.ExactArgs(1)}
	af := addAdminFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var rep ordersync.DeliveryReport
		if err := af.call(cmd.Context(), http.MethodPost, "/v1/delivery-dead-letters/"+args[0]+"/replay", nil, &rep); err != nil {
			return err
		}
		if err := writeIndented(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
		if !rep.Delivered {
			return errors.New("the endpoint did not accept it; the letter stays")
		}
		return nil
	}
	return cmd
}
