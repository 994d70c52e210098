package webhook

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// account is one merchant account as the receiver serves it.
type account struct {
	name string
	// verify checks its signatures; nil: unsigned webhooks accepted
	// (insecure mode). SetSecrets replaces it.
	verify atomic.Pointer[verifier]
	// requests counts the account's answers by outcome; counts holds the
	// same for the heartbeat (Receiver.Counts).
	requests [numOutcomes]prometheus.Counter
	counts   [numOutcomes]atomic.Int64
}

func newAccount(name string, secrets []string, m *metrics) *account {
	a := &account{name: name, requests: m.requestsOf(name)}
	a.setSecrets(secrets)
	return a
}

func (a *account) setSecrets(secrets []string) {
	if len(secrets) == 0 {
		a.verify.Store(nil)
		return
	}
	a.verify.Store(newVerifier(secrets))
}

// unknownAccount is the label of requests for an account not configured.
const unknownAccount = "unknown"

// warnUnsigned names the accounts whose webhooks are not verified.
func (rc *Receiver) warnUnsigned() {
	var unsigned []string
	for name, a := range rc.accounts {
		if a.verify.Load() == nil {
			unsigned = append(unsigned, name)
		}
	}
	if len(unsigned) > 0 {
		sort.Strings(unsigned)
		rc.logger.Warn("INSECURE: webhook signatures are NOT verified for these accounts; anyone who can reach the receiver can inject events",
			"accounts", unsigned)
	}
}

// SetSecrets replaces the webhook secrets of every account served, by
// account name (the default account's under ordersync.DefaultAccount), all
// or none: secrets must name exactly the accounts the receiver was built
// with, each valid as in Config. A request already being verified finishes
// with the secrets it began with.
func (rc *Receiver) SetSecrets(secrets map[string][]string) error {
	for name := range secrets {
		if _, ok := rc.accounts[name]; !ok {
			return fmt.Errorf("webhook receiver: account %q is not served here (an account is added at start)", name)
		}
	}
	for name := range rc.accounts {
		s, ok := secrets[name]
		if !ok {
			return fmt.Errorf("webhook receiver: no secrets given for account %q", name)
		}
		if err := checkSecrets(fmt.Sprintf("webhook secret of account %q", name), s, rc.cfg.Insecure); err != nil {
			return err
		}
	}
	for name, a := range rc.accounts {
		a.setSecrets(secrets[name])
	}
	rc.warnUnsigned()
	return nil
}

// route maps a request path to its account.
func (rc *Receiver) route(path string) (*account, bool) {
	rest, ok := strings.CutPrefix(path, Path)
	if !ok {
		return nil, false
	}
	name := strings.Trim(rest, "/")
	switch {
	case rest != "" && rest[0] != '/':
		return nil, false // "/webhooks/paymentlinkX"
	case name == "":
		name = ordersync.DefaultAccount
	case strings.Contains(name, "/"):
		return nil, false
	}
	a, err := rc.accounts.For(name)
	return a, err == nil
}
