package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/redact"
)

// The deployment files, which nothing here can run: TestDeployFiles holds
// them to the binary instead.
const (
	deployDir   = "../../deploy"
	composeFile = deployDir + "/compose.yaml"
	kubeDir     = deployDir + "/kubernetes"
	rulesFile   = "../../configs/prometheus/ordersync.rules.yml"
)

const (
	// shutdownDeadlines is how long a process may take to stop after its
	// drain: the shutdown's own deadlines of 30 s and a margin
	// (docs/deployment.md, "Restarts without refusals").
	shutdownDeadlines = 35 * time.Second
	// drainRoute answers 503 from the first moment of a drain
	// (TestServeDrainsOnSIGTERM): the readiness probes' path, and never a
	// liveness probe's, which would kill a process for draining.
	drainRoute = "/readyz"
	// serveMemoryLimit is serve's soft memory limit outside a container
	// (limitServeMemory): a container's memory limit must leave the
	// process more than the pipeline needs there.
	serveMemoryLimit = defaultServeMemoryLimit
	// scrapeJob is the job name the alert rules look for.
	scrapeJob = "ordersync"
)

// runtimeEnv are the Go runtime's variables the binary honours beside its
// settings (main.go).
var runtimeEnv = map[string]bool{"GOGC": true, "GOMEMLIMIT": true, "GOMAXPROCS": true}

// TestDeployFiles checks deploy/compose.yaml, its Prometheus file and the
// manifests in deploy/kubernetes against the binary: every command and
// flag through the CLI's own parser, every variable against the ones Load
// reads, the whole configuration of each process through Load and
// ValidateServe (with each mounted secret file standing in as a file of
// its own), every port against the listeners that configuration opens,
// and every probe and scrape path against a running serve's admin
// listener. Its subtests then break the files one way each and expect the
// check to name the break.
func TestDeployFiles(t *testing.T) {
	t.Parallel()
	bin := startBinary(t)
	docs := loadDeployDocs(t)
	// Each break is made on a copy of the files as parsed once.
	pristine := loadDeployDocs(t)
	if errs := docs.check(t, bin); len(errs) > 0 {
		t.Fatalf("the deployment files disagree with the binary:\n%v", errors.Join(errs...))
	}

	composeService := func(d *deployDocs, name string) map[string]any { return mapAt(d.compose, "services", name) }
	kubeDoc := func(d *deployDocs, kind, name string) map[string]any {
		for _, doc := range d.kube {
			if str(doc["kind"]) == kind && str(mapAt(doc, "metadata")["name"]) == name {
				return doc
			}
		}
		t.Fatalf("no %s %s in %s", kind, name, kubeDir)
		return nil
	}
	container := func(d *deployDocs, deployment string) map[string]any {
		return mapOf(listAt(kubeDoc(d, "Deployment", deployment), "spec", "template", "spec", "containers")[0])
	}
	for _, tc := range []struct {
		name   string
		mutate func(d *deployDocs)
		want   string
	}{
		{"compose: unknown command", func(d *deployDocs) { composeService(d, "receiver")["command"] = []any{"serv", "--role", "receiver"} }, `unknown command "serv"`},
		{"compose: unknown flag", func(d *deployDocs) { composeService(d, "worker")["command"] = []any{"serve", "--rol", "worker"} }, "unknown flag: --rol"},
		{"compose: a flag of serve given to migrate", func(d *deployDocs) { composeService(d, "migrate")["command"] = []any{"migrate", "--workers", "8"} }, "unknown flag: --workers"},
		{"compose: unknown variable", func(d *deployDocs) {
			mapAt(composeService(d, "worker"), "environment")["ORDERSYNC_WORKER"] = "64"
		}, "ORDERSYNC_WORKER is not one ordersync reads"},
		{"compose: a bad value", func(d *deployDocs) {
			mapAt(composeService(d, "relay"), "environment")["ORDERSYNC_LEADER_TTL"] = "10 seconds"
		}, "ORDERSYNC_LEADER_TTL"},
		{"compose: a bad role", func(d *deployDocs) { composeService(d, "relay")["command"] = []any{"serve", "--role", "relays"} }, `role "relays"`},
		{"compose: a secret file not mounted", func(d *deployDocs) {
			mapAt(composeService(d, "worker"), "environment")["ORDERSYNC_SECRET_KEY_FILE"] = "/run/secrets/secretkey"
		}, "/run/secrets/secretkey is not a file mounted"},
		{"compose: a secret in plain text", func(d *deployDocs) {
			env := mapAt(composeService(d, "worker"), "environment")
			delete(env, "ORDERSYNC_SECRET_KEY_FILE")
			env["ORDERSYNC_SECRET_KEY"] = "sk_live_x"
		}, "ORDERSYNC_SECRET_KEY holds a secret"},
		{"compose: admin port moved under Prometheus", func(d *deployDocs) {
			mapAt(composeService(d, "reconciler"), "environment")["ORDERSYNC_ADMIN_LISTEN"] = ":9091"
		}, "Prometheus scrapes reconciler on port 9090, its admin listener is on 9091"},
		{"compose: a published port nothing listens on", func(d *deployDocs) { composeService(d, "admin")["ports"] = []any{"127.0.0.1:9090:9999"} }, "port 9999"},
		{"compose: stop_grace_period inside the drain", func(d *deployDocs) { composeService(d, "worker")["stop_grace_period"] = "10s" }, "stop_grace_period 10s"},
		{"compose: a role not scraped", func(d *deployDocs) {
			sd := mapOf(listAt(mapOf(listAt(d.prometheus, "scrape_configs")[0]), "dns_sd_configs")[0])
			sd["names"] = []any{"receiver", "relay", "reconciler", "admin"}
		}, "worker is not scraped"},
		{"prometheus: a metrics path that is no route", func(d *deployDocs) {
			mapOf(listAt(d.prometheus, "scrape_configs")[0])["metrics_path"] = "/metric"
		}, "metrics_path /metric"},
		{"prometheus: another job name", func(d *deployDocs) {
			mapOf(listAt(d.prometheus, "scrape_configs")[0])["job_name"] = "ordersync-roles"
		}, `no scrape job "ordersync"`},
		{"prometheus: no token", func(d *deployDocs) { delete(mapOf(listAt(d.prometheus, "scrape_configs")[0]), "authorization") }, "answers 401"},
		{"kubernetes: unknown flag", func(d *deployDocs) {
			container(d, "ordersync-receiver")["args"] = []any{"serve", "--role", "receiver", "--drain", "5s"}
		}, "unknown flag: --drain"},
		{"kubernetes: unknown variable in the ConfigMap", func(d *deployDocs) {
			mapAt(kubeDoc(d, "ConfigMap", "ordersync-config"), "data")["ORDERSYNC_SHUTDOWN_GRACE"] = "15s"
		}, "ORDERSYNC_SHUTDOWN_GRACE is not one ordersync reads"},
		{"kubernetes: a bad value in the ConfigMap", func(d *deployDocs) {
			mapAt(kubeDoc(d, "ConfigMap", "ordersync-config"), "data")["ORDERSYNC_SHUTDOWN_DRAIN"] = "15 s"
		}, "ORDERSYNC_SHUTDOWN_DRAIN"},
		{"kubernetes: a readiness path that is no route", func(d *deployDocs) {
			mapAt(container(d, "ordersync-worker"), "readinessProbe", "httpGet")["path"] = "/ready"
		}, "path /ready: the admin listener answers 401"},
		{"kubernetes: readiness on the liveness route", func(d *deployDocs) {
			mapAt(container(d, "ordersync-relay"), "readinessProbe", "httpGet")["path"] = "/healthz"
		}, "readinessProbe: path /healthz"},
		{"kubernetes: liveness on the webhook port", func(d *deployDocs) {
			mapAt(container(d, "ordersync-receiver"), "livenessProbe", "httpGet")["port"] = "webhook"
		}, "livenessProbe: port webhook is 8080"},
		{"kubernetes: a container port nothing listens on", func(d *deployDocs) {
			mapOf(listAt(container(d, "ordersync-admin"), "ports")[0])["containerPort"] = 9091
		}, "container ports [9091], want [9090]"},
		{"kubernetes: readiness slower than the drain", func(d *deployDocs) {
			mapAt(container(d, "ordersync-worker"), "readinessProbe")["periodSeconds"] = 10
		}, "readinessProbe takes 30s to see a drain"},
		{"kubernetes: grace period inside the drain", func(d *deployDocs) {
			mapAt(kubeDoc(d, "Deployment", "ordersync-relay"), "spec", "template", "spec")["terminationGracePeriodSeconds"] = 30
		}, "terminationGracePeriodSeconds 30"},
		{"kubernetes: a preStop the image cannot run", func(d *deployDocs) {
			container(d, "ordersync-worker")["lifecycle"] = map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"sleep", "5"}}}}
		}, "preStop exec"},
		{"kubernetes: a preStop sleep past the grace period", func(d *deployDocs) {
			container(d, "ordersync-worker")["lifecycle"] = map[string]any{"preStop": map[string]any{"sleep": map[string]any{"seconds": 20}}}
		}, "terminationGracePeriodSeconds 60"},
		{"kubernetes: no resource requests", func(d *deployDocs) { delete(mapAt(container(d, "ordersync-worker"), "resources"), "requests") }, "no cpu and memory requests"},
		{"kubernetes: a memory limit under serve's own", func(d *deployDocs) {
			mapAt(container(d, "ordersync-relay"), "resources", "limits")["memory"] = "64Mi"
		}, "memory limit 64Mi"},
		{"kubernetes: a secret mount moved", func(d *deployDocs) {
			mapOf(listAt(container(d, "ordersync-reconciler"), "volumeMounts")[0])["mountPath"] = "/etc/secrets"
		}, "/etc/ordersync/secrets/secret_key is not a file mounted"},
		{"kubernetes: a Service port no pod has", func(d *deployDocs) {
			mapOf(listAt(kubeDoc(d, "Service", "ordersync-admin"), "spec", "ports")[0])["targetPort"] = "metrics"
		}, `targetPort "metrics"`},
		{"kubernetes: a PodDisruptionBudget that selects nothing", func(d *deployDocs) {
			mapAt(kubeDoc(d, "PodDisruptionBudget", "ordersync-relay"), "spec", "selector", "matchLabels")["app.kubernetes.io/component"] = "relays"
		}, "selects no Deployment"},
		{"kubernetes: a PodDisruptionBudget that blocks every drain", func(d *deployDocs) {
			mapAt(kubeDoc(d, "PodDisruptionBudget", "ordersync-receiver"), "spec")["minAvailable"] = 2
		}, "minAvailable 2 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := pristine.clone()
			tc.mutate(d)
			errs := d.check(t, bin)
			joined := errors.Join(errs...)
			t.Log(joined)
			if joined == nil || !strings.Contains(joined.Error(), tc.want) {
				t.Fatalf("want a problem naming %q, got:\n%v", tc.want, joined)
			}
		})
	}
}

// binary is what the files must agree with, taken from the binary: the
// variables Load reads, and a running serve's admin listener, with admin
// tokens as in production, for the probes' and the scrape's paths. Its
// standIns directory holds the stand-ins of mounted secret files, each
// named by its content's hash, so every check of the test shares them.
type binary struct {
	env      map[string]bool
	admin    string
	viewer   string
	standIns string
}

func startBinary(t *testing.T) binary {
	viewer := app.RandomSecret()
	st := startTestStack(t, app.StackOptions{Configure: func(c *app.Config) {
		c.AdminTokens = []ordersync.AdminToken{
			{Name: "operator", Role: ordersync.RoleOperator, Token: app.RandomSecret()},
			{Name: "viewer", Role: ordersync.RoleViewer, Token: viewer},
		}
	}})
	env := map[string]bool{}
	for _, name := range app.EnvVars() {
		env[name] = true
	}
	return binary{env: env, admin: st.Program.AdminURL(), viewer: viewer, standIns: t.TempDir()}
}

// answer is the admin listener's status for a GET of path, with token.
func (b binary) answer(path, token string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, b.admin+path, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// deployDocs are the files as parsed: the Compose file, the Prometheus
// file it mounts, and every manifest.
type deployDocs struct {
	compose    map[string]any
	prometheus map[string]any
	kube       []map[string]any
}

func loadDeployDocs(t *testing.T) *deployDocs {
	t.Helper()
	d := &deployDocs{compose: readYAML(t, composeFile)}
	// The Prometheus file is the one Compose mounts where --config.file
	// says.
	for _, svc := range mapAt(d.compose, "services") {
		svc := mapOf(svc)
		if !strings.HasPrefix(str(svc["image"]), "prom/prometheus") {
			continue
		}
		for _, arg := range strList(svc["command"]) {
			if target, ok := strings.CutPrefix(arg, "--config.file="); ok {
				if source, ok := composeVolumes(svc)[target]; ok {
					d.prometheus = readYAML(t, filepath.Join(deployDir, source))
				}
			}
		}
	}
	if d.prometheus == nil {
		t.Fatalf("%s: no Prometheus service whose --config.file is a mounted file", composeFile)
	}
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", kubeDir, err)
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(f)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%s: %v", file, err)
				}
				break
			}
			if doc != nil && str(doc["kind"]) != "Kustomization" {
				d.kube = append(d.kube, doc)
			}
		}
		f.Close()
	}
	return d
}

// clone is a deep copy of the parsed files, for a check to break.
func (d *deployDocs) clone() *deployDocs {
	c := &deployDocs{compose: copyYAML(d.compose).(map[string]any), prometheus: copyYAML(d.prometheus).(map[string]any)}
	for _, doc := range d.kube {
		c.kube = append(c.kube, copyYAML(doc).(map[string]any))
	}
	return c
}

// copyYAML copies a parsed YAML node: its maps and lists anew, its
// scalars as they are.
func copyYAML(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			out[k] = copyYAML(item)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = copyYAML(item)
		}
		return out
	default:
		return v
	}
}

func readYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc
}

func (d *deployDocs) check(t *testing.T, bin binary) []error {
	return append(d.checkCompose(t, bin), d.checkKubernetes(t, bin)...)
}

// process is one ordersync container as a file describes it.
type process struct {
	where string
	args  []string
	env   []envVar
	// files maps each secret file mounted in the container to its source
	// (a Compose secret, a Secret's key).
	files map[string]string
}

type envVar struct{ name, value string }

// settled is what a process runs, as the binary reads it.
type settled struct {
	cmd                    string
	cfg                    app.Config
	webhookPort, adminPort int
}

// checkProcess runs a process's command line and variables through the
// binary's own parsers: the command tree, the command's flags, Load (each
// mounted secret file replaced by a temporary one) and, for serve,
// ValidateServe.
func checkProcess(t *testing.T, p process, bin binary) (settled, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(p.where+": "+format, args...)) }
	root := newRootCommand()
	cmd, rest, err := root.Find(p.args)
	if err != nil || cmd == root || !cmd.Runnable() {
		bad("command %q: not an ordersync command (%v)", p.args, err)
		return settled{}, errs
	}
	if err := cmd.ParseFlags(rest); err != nil {
		bad("%s: %v", cmd.CommandPath(), err)
		return settled{}, errs
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		bad("%s: %v", cmd.CommandPath(), err)
	}
	s := settled{cmd: cmd.Name()}

	// A file a setting names must be mounted; Load then reads a stand-in.
	dir := bin.standIns
	standIn := func(name, file string) string {
		sum := sha256.Sum256([]byte(file))
		if _, ok := p.files[file]; !ok {
			bad("%s: %s is not a file mounted in the container (mounted: %s)", name, file, strings.Join(slices.Sorted(maps.Keys(p.files)), ", "))
			// Load then fails to read it, rather than read this machine's.
			return filepath.Join(dir, "missing-"+hex.EncodeToString(sum[:8]))
		}
		content := hex.EncodeToString(sum[:16])
		if strings.Contains(strings.ToUpper(name), "DATABASE") {
			content = "postgres://ordersync:" + content + "@postgres:5432/ordersync"
		}
		// Named by its content, which the setting's name shapes too.
		named := sha256.Sum256([]byte(content))
		local := filepath.Join(dir, hex.EncodeToString(named[:8]))
		if _, err := os.Stat(local); err == nil {
			return local
		}
		if err := os.WriteFile(local, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return local
	}
	// A later variable of the same name wins, as env wins over envFrom.
	env := map[string]string{}
	for _, v := range p.env {
		switch {
		case runtimeEnv[v.name]:
			continue
		case !bin.env[v.name]:
			bad("environment variable %s is not one ordersync reads", v.name)
			continue
		case bin.env[v.name+"_FILE"] && !(strings.HasSuffix(v.name, "_URL") && redact.URL(v.value) == v.value):
			// A URL may go in plain text when it carries no credential.
			bad("environment variable %s holds a secret in plain text: mount it as a file and name it in %s_FILE", v.name, v.name)
		}
		env[v.name] = v.value
		if strings.HasSuffix(v.name, "_FILE") {
			env[v.name] = standIn(v.name, v.value)
		}
	}
	if cmd.Flags().Lookup("config") == nil {
		return s, errs
	}
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	flags := app.AddConfigFlags(fs, app.ScopeAll)
	if err := fs.Parse(rest); err != nil {
		bad("%v", err)
		return s, errs
	}
	fs.Visit(func(f *pflag.Flag) {
		if strings.HasSuffix(f.Name, "-file") {
			_ = fs.Set(f.Name, standIn("--"+f.Name, f.Value.String()))
		}
	})
	cfg, err := flags.Load(func(name string) string { return env[name] })
	if err != nil {
		bad("%s: %v", cmd.CommandPath(), err)
		return s, errs
	}
	s.cfg = cfg
	if !strings.HasPrefix(cfg.DatabaseURL, "postgres://") {
		bad("%s: the mirror is %s, not the deployment's PostgreSQL (set ORDERSYNC_DATABASE_URL_FILE)", cmd.CommandPath(), cfg.DatabaseURL)
	}
	if s.cmd != "serve" {
		return s, errs
	}
	if err := cfg.ValidateServe(); err != nil {
		bad("serve: %v", err)
	}
	if cfg.NATSURL == "" {
		bad("serve: no nats_url: the process would run NATS embedded, apart from the cluster")
	}
	port := func(setting, addr string) int {
		_, p, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			bad("%s %q has no port", setting, addr)
		}
		return n
	}
	s.adminPort = port("admin_listen", cfg.AdminListen)
	for _, role := range strings.Split(cfg.Role, ",") {
		if r := strings.TrimSpace(role); r == "receiver" || r == "all" {
			s.webhookPort = port("listen", cfg.Listen)
		}
	}
	return s, errs
}

// ports are the ports a serve process listens on.
func (s settled) ports() []int {
	out := []int{s.adminPort}
	if s.webhookPort != 0 {
		out = append(out, s.webhookPort)
	}
	slices.Sort(out)
	return out
}

// drainBudget is the longest a serve process takes to stop after SIGTERM.
func (s settled) drainBudget() time.Duration { return s.cfg.ShutdownDrain + shutdownDeadlines }

func isOrdersyncImage(image string) bool {
	name, _, _ := strings.Cut(path.Base(image), ":")
	return name == "ordersync"
}

// checkCompose checks the Compose file and the Prometheus file it mounts.
func (d *deployDocs) checkCompose(t *testing.T, bin binary) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("compose: "+format, args...)) }
	services := mapAt(d.compose, "services")
	secrets := mapAt(d.compose, "secrets")
	serving := map[string]settled{}
	// readers maps a secret to the variables that read it.
	readers := map[string][]string{}
	var prom, promFiles map[string]any
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc := mapOf(services[name])
		for dep := range mapOf(svc["depends_on"]) {
			if _, ok := services[dep]; !ok {
				bad("service %s depends on %s, which is no service", name, dep)
			}
		}
		files := map[string]string{}
		for _, s := range listOf(svc["secrets"]) {
			source, target := str(s), ""
			if long := mapOf(s); long != nil {
				source, target = str(long["source"]), str(long["target"])
			}
			if target == "" {
				target = source
			}
			if !path.IsAbs(target) {
				target = "/run/secrets/" + target
			}
			if _, ok := secrets[source]; !ok {
				bad("service %s mounts secret %s, which the file does not define", name, source)
			}
			files[target] = source
		}
		image, err := interpolate(str(svc["image"]))
		if err != nil {
			bad("service %s: image: %v", name, err)
		}
		if strings.HasPrefix(image, "prom/prometheus") {
			prom, promFiles = svc, map[string]any{}
			for k, v := range files {
				promFiles[k] = v
			}
		}
		if !isOrdersyncImage(image) {
			continue
		}
		if _, ok := svc["command"].(string); ok {
			bad("service %s: write its command as a list, as the image's entrypoint takes it", name)
		}
		p := process{where: "compose service " + name, args: strList(svc["command"]), files: files}
		environment := mapOf(svc["environment"])
		for _, k := range slices.Sorted(maps.Keys(environment)) {
			v, err := interpolate(str(environment[k]))
			if err != nil {
				bad("service %s: %s: %v", name, k, err)
			}
			p.env = append(p.env, envVar{k, v})
			if source, ok := files[v]; ok {
				readers[source] = append(readers[source], k)
			}
		}
		if len(environment) == 0 && svc["environment"] != nil {
			bad("service %s: write its environment as a mapping", name)
		}
		s, perrs := checkProcess(t, p, bin)
		errs = append(errs, perrs...)
		if s.cmd != "serve" {
			continue
		}
		// Kept when its configuration failed, which is reported already.
		serving[name] = s
		if s.adminPort == 0 {
			continue
		}
		for _, spec := range strList(svc["ports"]) {
			container := spec[strings.LastIndex(spec, ":")+1:]
			container, _, _ = strings.Cut(container, "/")
			if n, err := strconv.Atoi(container); err != nil || !slices.Contains(s.ports(), n) {
				bad("service %s publishes port %s, where it listens on %v", name, container, s.ports())
			}
		}
		grace, err := time.ParseDuration(str(svc["stop_grace_period"]))
		if err != nil {
			grace = 10 * time.Second // Compose's default
		}
		if grace < s.drainBudget() {
			bad("service %s: stop_grace_period %s is shorter than shutdown_drain (%s) and the shutdown's deadlines (%s)",
				name, grace, s.cfg.ShutdownDrain, shutdownDeadlines)
		}
	}
	if prom == nil {
		bad("no Prometheus service")
		return errs
	}
	return append(errs, d.checkPrometheus(prom, promFiles, serving, readers, bin)...)
}

// checkPrometheus checks that Prometheus loads the project's rules and
// scrapes every serve service's admin listener under the rules' job name,
// with a token the admin API takes.
func (d *deployDocs) checkPrometheus(svc, files map[string]any, serving map[string]settled, readers map[string][]string, bin binary) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("prometheus: "+format, args...)) }
	mounts := composeVolumes(svc)
	rules, _ := filepath.Abs(rulesFile)
	for _, file := range strList(d.prometheus["rule_files"]) {
		source, ok := mounts[file]
		if abs, _ := filepath.Abs(filepath.Join(deployDir, source)); !ok || abs != rules {
			bad("rule file %s is not %s mounted", file, rulesFile)
		}
	}
	if len(strList(d.prometheus["rule_files"])) == 0 {
		bad("no rule_files: load %s", rulesFile)
	}
	var job map[string]any
	for _, sc := range listAt(d.prometheus, "scrape_configs") {
		if str(mapOf(sc)["job_name"]) == scrapeJob {
			job = mapOf(sc)
		}
	}
	if job == nil {
		bad("no scrape job %q, which the alert rules look for", scrapeJob)
		return errs
	}
	scraped := map[string]bool{}
	target := func(host string, port int) {
		s, ok := serving[host]
		switch {
		case !ok:
			bad("target %s is no ordersync serve service", host)
		case s.adminPort != 0 && port != s.adminPort:
			bad("Prometheus scrapes %s on port %d, its admin listener is on %d", host, port, s.adminPort)
		}
		scraped[host] = true
	}
	for _, sd := range listOf(job["dns_sd_configs"]) {
		port, _ := mapOf(sd)["port"].(int)
		for _, host := range strList(mapOf(sd)["names"]) {
			target(host, port)
		}
	}
	for _, sc := range listOf(job["static_configs"]) {
		for _, hostport := range strList(mapOf(sc)["targets"]) {
			host, p, _ := net.SplitHostPort(hostport)
			port, _ := strconv.Atoi(p)
			target(host, port)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(serving)) {
		if !scraped[name] {
			bad("service %s is not scraped", name)
		}
	}
	metricsPath := str(job["metrics_path"])
	if metricsPath == "" {
		metricsPath = "/metrics"
	}
	token := ""
	if file := str(mapAt(job, "authorization")["credentials_file"]); file != "" {
		source, ok := files[file]
		if !ok {
			bad("credentials_file %s is not a secret mounted in its container", file)
		}
		if !slices.Contains(readers[str(source)], "ORDERSYNC_ADMIN_VIEWER_TOKEN_FILE") && !slices.Contains(readers[str(source)], "ORDERSYNC_ADMIN_TOKEN_FILE") {
			bad("credentials_file %s is secret %v, which no ordersync service reads as its admin tokens", file, source)
		}
		token = bin.viewer
	}
	if code, err := bin.answer(metricsPath, token); err != nil || code != http.StatusOK {
		bad("metrics_path %s: the admin listener answers %d (%v)", metricsPath, code, err)
	}
	return errs
}

// composeVolumes maps a service's bind mounts' targets to their sources.
func composeVolumes(svc map[string]any) map[string]string {
	out := map[string]string{}
	for _, v := range strList(svc["volumes"]) {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[0], ".") {
			out[parts[1]] = parts[0]
		}
	}
	return out
}

var composeVariable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// interpolate is a value as Compose gives it when no variable is set:
// each ${NAME:-default} its default.
func interpolate(s string) (string, error) {
	var err error
	out := composeVariable.ReplaceAllStringFunc(s, func(m string) string {
		sub := composeVariable.FindStringSubmatch(m)
		if sub[2] == "" {
			err = fmt.Errorf("${%s} has no default", sub[1])
		}
		return sub[3]
	})
	return out, err
}

// kubePod is a Deployment's or Job's pod, as checkKubernetes needs it.
type kubePod struct {
	kind, name string
	replicas   int
	labels     map[string]any
	spec       map[string]any
	container  map[string]any
	serve      settled
}

// checkKubernetes checks every manifest: each ordersync container's
// command, variables, secret files, ports, probes, stop budget and
// resources, and the Services and PodDisruptionBudgets over them.
func (d *deployDocs) checkKubernetes(t *testing.T, bin binary) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("kubernetes: "+format, args...)) }
	configMaps := map[string]map[string]any{}
	for _, doc := range d.kube {
		if str(doc["kind"]) == "ConfigMap" {
			configMaps[str(mapAt(doc, "metadata")["name"])] = mapAt(doc, "data")
		}
	}
	var pods []kubePod
	for _, doc := range d.kube {
		kind := str(doc["kind"])
		if kind != "Deployment" && kind != "Job" {
			continue
		}
		pod := kubePod{kind: kind, name: str(mapAt(doc, "metadata")["name"]), replicas: 1,
			labels: mapAt(doc, "spec", "template", "metadata", "labels"), spec: mapAt(doc, "spec", "template", "spec")}
		if r, ok := mapAt(doc, "spec")["replicas"].(int); ok {
			pod.replicas = r
		}
		for _, c := range listOf(pod.spec["containers"]) {
			if isOrdersyncImage(str(mapOf(c)["image"])) {
				pod.container = mapOf(c)
			}
		}
		if pod.container == nil {
			continue
		}
		where := kind + " " + pod.name
		p := process{where: "kubernetes " + where, args: strList(pod.container["args"]), files: kubeSecretFiles(pod, bad)}
		if pod.container["command"] != nil {
			bad("%s: command replaces the image's entrypoint; give the subcommand and flags in args", where)
		}
		for _, from := range listOf(pod.container["envFrom"]) {
			ref := str(mapAt(mapOf(from), "configMapRef")["name"])
			data, ok := configMaps[ref]
			if !ok {
				bad("%s: envFrom names %v, which is no ConfigMap here (secrets go in files)", where, from)
			}
			for _, k := range slices.Sorted(maps.Keys(data)) {
				p.env = append(p.env, envVar{k, str(data[k])})
			}
		}
		for _, e := range listOf(pod.container["env"]) {
			if mapOf(e)["valueFrom"] != nil {
				bad("%s: %s: valueFrom, whose value this check cannot read", where, str(mapOf(e)["name"]))
			}
			p.env = append(p.env, envVar{str(mapOf(e)["name"]), str(mapOf(e)["value"])})
		}
		s, perrs := checkProcess(t, p, bin)
		errs = append(errs, perrs...)
		if s.cmd == "serve" && s.adminPort != 0 {
			pod.serve = s
			d.checkServePod(pod, bin, bad)
		}
		pods = append(pods, pod)
	}
	selected := func(selector map[string]any) []kubePod {
		var out []kubePod
		for _, pod := range pods {
			match := pod.kind == "Deployment" && len(selector) > 0
			for k, v := range selector {
				match = match && str(pod.labels[k]) == str(v)
			}
			if match {
				out = append(out, pod)
			}
		}
		return out
	}
	for _, doc := range d.kube {
		name := str(mapAt(doc, "metadata")["name"])
		switch str(doc["kind"]) {
		case "Service":
			matched := selected(mapAt(doc, "spec", "selector"))
			if len(matched) == 0 {
				bad("Service %s selects no Deployment", name)
			}
			for _, sp := range listAt(doc, "spec", "ports") {
				target := mapOf(sp)["targetPort"]
				if target == nil {
					target = mapOf(sp)["port"]
				}
				for _, pod := range matched {
					if _, ok := containerPort(pod.container, target); !ok {
						bad("Service %s: targetPort %q is no port of Deployment %s", name, str(target), pod.name)
					}
				}
			}
		case "PodDisruptionBudget":
			matched := selected(mapAt(doc, "spec", "selector", "matchLabels"))
			if len(matched) == 0 {
				bad("PodDisruptionBudget %s selects no Deployment", name)
				continue
			}
			replicas := 0
			for _, pod := range matched {
				replicas += pod.replicas
			}
			spec := mapAt(doc, "spec")
			if n, ok := spec["minAvailable"].(int); ok && n >= replicas {
				bad("PodDisruptionBudget %s: minAvailable %d of %d replicas lets no node drain", name, n, replicas)
			}
			if n, ok := spec["maxUnavailable"].(int); ok && n < 1 {
				bad("PodDisruptionBudget %s: maxUnavailable %d lets no node drain", name, n)
			}
		}
	}
	return errs
}

// checkServePod checks a serve pod's ports, probes, stop budget and
// resources against what its process listens on and how it drains.
func (d *deployDocs) checkServePod(pod kubePod, bin binary, bad func(string, ...any)) {
	where, c, s := pod.kind+" "+pod.name, pod.container, pod.serve
	var ports []int
	for _, cp := range listOf(c["ports"]) {
		n, _ := mapOf(cp)["containerPort"].(int)
		ports = append(ports, n)
	}
	slices.Sort(ports)
	if !slices.Equal(ports, s.ports()) {
		bad("%s: container ports %v, want %v (admin_listen, and listen for a receiver)", where, ports, s.ports())
	}
	for _, name := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
		probe := mapOf(c[name])
		if probe == nil {
			if name != "startupProbe" {
				bad("%s: no %s", where, name)
			}
			continue
		}
		get := mapOf(probe["httpGet"])
		if get == nil {
			bad("%s: %s: want httpGet on the admin listener", where, name)
			continue
		}
		if port, ok := containerPort(c, get["port"]); !ok || port != s.adminPort {
			bad("%s: %s: port %v is %d, the admin listener is on %d", where, name, get["port"], port, s.adminPort)
		}
		probePath := str(get["path"])
		if code, err := bin.answer(probePath, ""); err != nil || code != http.StatusOK {
			bad("%s: %s: path %s: the admin listener answers %d (%v) without a token", where, name, probePath, code, err)
		}
		if (name == "readinessProbe") != (probePath == drainRoute) {
			bad("%s: %s: path %s: readiness asks %s, which turns 503 when the process drains; liveness and start-up never do",
				where, name, probePath, drainRoute)
		}
	}
	if ready := mapOf(c["readinessProbe"]); ready != nil {
		period, threshold := intOr(ready["periodSeconds"], 10), intOr(ready["failureThreshold"], 3)
		if seen := time.Duration(period*threshold) * time.Second; seen > s.cfg.ShutdownDrain {
			bad("%s: readinessProbe takes %s to see a drain, longer than shutdown_drain %s", where, seen, s.cfg.ShutdownDrain)
		}
	}
	budget := s.drainBudget()
	if preStop := mapAt(c, "lifecycle", "preStop"); preStop != nil {
		if preStop["exec"] != nil || preStop["httpGet"] != nil {
			bad("%s: preStop exec or httpGet: the image holds nothing to run and no route for it; the process drains by itself", where)
		}
		budget += time.Duration(intOr(mapOf(preStop["sleep"])["seconds"], 0)) * time.Second
	}
	if grace := time.Duration(intOr(pod.spec["terminationGracePeriodSeconds"], 30)) * time.Second; grace < budget {
		bad("%s: terminationGracePeriodSeconds %d is shorter than its preStop, shutdown_drain (%s) and the shutdown's deadlines (%s): %s",
			where, grace/time.Second, s.cfg.ShutdownDrain, shutdownDeadlines, budget)
	}
	requests := mapAt(c, "resources", "requests")
	if requests["cpu"] == nil || requests["memory"] == nil {
		bad("%s: no cpu and memory requests", where)
	}
	if limit := str(mapAt(c, "resources", "limits")["memory"]); limit != "" {
		if n, ok := bytesOf(limit); !ok || n <= serveMemoryLimit {
			bad("%s: memory limit %s is not above serve's own soft limit of %d MiB", where, limit, serveMemoryLimit>>20)
		}
	}
}

// kubeSecretFiles are the files a pod's Secret volumes put in its
// container, each from its Secret's key.
func kubeSecretFiles(pod kubePod, bad func(string, ...any)) map[string]string {
	volumes := map[string]map[string]any{}
	for _, v := range listOf(pod.spec["volumes"]) {
		volumes[str(mapOf(v)["name"])] = mapOf(v)
	}
	files := map[string]string{}
	for _, m := range listOf(pod.container["volumeMounts"]) {
		mount := mapOf(m)
		secret := mapOf(volumes[str(mount["name"])]["secret"])
		if secret == nil {
			continue
		}
		items := listOf(secret["items"])
		if len(items) == 0 {
			bad("%s %s: Secret volume %s: list its items, so that its files are known", pod.kind, pod.name, str(mount["name"]))
		}
		for _, it := range items {
			file := path.Join(str(mount["mountPath"]), str(mapOf(it)["path"]))
			if sub := str(mount["subPath"]); sub != "" {
				if sub != str(mapOf(it)["path"]) {
					continue
				}
				file = str(mount["mountPath"])
			}
			files[file] = str(secret["secretName"]) + "/" + str(mapOf(it)["key"])
		}
	}
	return files
}

// containerPort resolves a probe's or Service's port, a number or a
// container port's name, to the container port.
func containerPort(c map[string]any, port any) (int, bool) {
	for _, cp := range listOf(c["ports"]) {
		n, _ := mapOf(cp)["containerPort"].(int)
		if name, ok := port.(string); ok && str(mapOf(cp)["name"]) == name {
			return n, true
		}
		if want, ok := port.(int); ok && want == n {
			return n, true
		}
	}
	if n, ok := port.(int); ok {
		return n, false
	}
	return 0, false
}

// bytesOf reads a Kubernetes memory quantity in the binary or decimal
// units of a manifest.
func bytesOf(q string) (int64, bool) {
	for _, u := range []struct {
		suffix string
		scale  int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"", 1}} {
		if n, ok := strings.CutSuffix(q, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * u.scale, err == nil
		}
	}
	return 0, false
}

// The YAML trees' accessors: a missing or differently shaped node reads
// as empty, and the checks name what is missing.

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

func mapAt(v any, keys ...string) map[string]any {
	for _, k := range keys {
		v = mapOf(v)[k]
	}
	return mapOf(v)
}

func listAt(v any, keys ...string) []any {
	for _, k := range keys {
		v = mapOf(v)[k]
	}
	return listOf(v)
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func strList(v any) []string {
	var out []string
	for _, item := range listOf(v) {
		out = append(out, str(item))
	}
	return out
}

func intOr(v any, def int) int {
	if n, ok := v.(int); ok {
		return n
	}
	return def
}

// TestKustomizationListsTheManifests: kubectl apply -k applies every
// manifest but the migration Job, which runs before a rollout on its own.
func TestKustomizationListsTheManifests(t *testing.T) {
	k := readYAML(t, filepath.Join(kubeDir, "kustomization.yaml"))
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && base != "migrate-job.yaml" {
			want = append(want, base)
		}
	}
	if got := slices.Sorted(slices.Values(strList(k["resources"]))); !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml lists %v, want %v", got, want)
	}
}
