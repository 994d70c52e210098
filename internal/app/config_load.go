package app

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync/internal/datadir"
)

// Scope is a set of the parts of the configuration a command needs.
type Scope uint8

const (
	scopeServe    Scope = 0         // serve only
	ScopeMirror   Scope = 1 << iota // commands that open the mirror
	ScopeUpstream                   // commands that call the payment link service
	ScopeAdmin                      // commands that ask a running serve's admin API
	ScopeAll      = ScopeMirror | ScopeUpstream | ScopeAdmin
)

// ConfigFlags are a command's flags of settings. Only the flags given
// override the file and the environment.
type ConfigFlags struct {
	path string
	fs   *pflag.FlagSet
}

// AddConfigFlags adds --config and a typed flag, with its default, for
// each setting in scope: every setting for serve (scopeAll), the few
// that reach the mirror, the service or the admin API for the others.
func AddConfigFlags(fs *pflag.FlagSet, sc Scope) *ConfigFlags {
	f := &ConfigFlags{fs: fs}
	fs.StringVar(&f.path, "config", "", "YAML config file (env ORDERSYNC_CONFIG; see configs/ordersync.example.yaml)")
	defaults := DefaultConfig()
	for _, st := range settings {
		if sc != ScopeAll && st.scope&sc == 0 {
			continue
		}
		fl := fs.VarPF(&settingFlag{kind: st.set.kind, text: st.set.show(&defaults)}, st.flagName(), "", st.usage+" ("+st.env+")")
		if st.set.kind == "bool" {
			fl.NoOptDefVal = "true"
		}
		// A replaced setting is read, to say what replaces it, and hidden
		// from the help.
		fl.Hidden = st.replaced
		if st.secret {
			fs.VarP(&settingFlag{kind: "string"}, st.fileFlag(), "", "file holding the "+st.flagName()+" setting, trimmed; read again on reload ("+st.fileEnv()+")")
		}
	}
	return f
}

// settingFlag holds a flag's text until load parses it with its setting,
// after the file and the environment.
type settingFlag struct{ kind, text string }

func (f *settingFlag) String() string { return f.text }

func (f *settingFlag) Set(v string) error { f.text = v; return nil }

func (f *settingFlag) Type() string { return f.kind }

// Load builds the Config: defaults, then the file, then the environment,
// then the flags that were given. It reports every bad value at once, each
// with where it came from: the file's line, the variable or the flag.
func (f *ConfigFlags) Load(getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	var errs []error
	path := f.path
	if path == "" {
		path = getenv("ORDERSYNC_CONFIG")
	}
	if path != "" {
		errs = append(errs, loadFile(&cfg, path)...)
	}
	errs = append(errs, loadAccountsEnv(&cfg, getenv)...)
	errs = append(errs, loadEnv(&cfg, settings, "", getenv)...)
	for _, st := range settings {
		fl, file := f.fs.Lookup(st.flagName()), f.fs.Lookup(st.fileFlag())
		given, fileGiven := fl != nil && fl.Changed, st.secret && file != nil && file.Changed
		switch {
		case given && fileGiven:
			errs = append(errs, fmt.Errorf("--%s and --%s: give one of them", fl.Name, file.Name))
		case given:
			if err := st.set.parse(&cfg, fl.Value.String()); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", fl.Name, err))
			}
		case fileGiven:
			if err := st.parseFile(&cfg, file.Value.String()); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", file.Name, err))
			}
		}
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = datadir.DatabaseFile(cfg.DataDir)
	}
	return cfg, joinProblems(errs)
}

// loadFile reads a YAML config file into cfg through the settings' own
// parsers, so that a bad value is named by its key and line in the file.
func loadFile(cfg *Config, path string) []error {
	b, err := os.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("read config file: %w", err)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return []error{fmt.Errorf("config file %s is not valid YAML: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if len(doc.Content) == 0 { // an empty file
		return nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("config file %s, line %d: want settings as key: value lines", path, top.Line)}
	}
	at := func(n *yaml.Node, key string, err error) error {
		return fmt.Errorf("config file %s, line %d: %s: %w", path, n.Line, key, err)
	}
	return loadMapping(cfg, settings, top, "", func(k, v *yaml.Node) []error {
		switch k.Value {
		case "accounts":
			return loadAccounts(cfg, v, at)
		case "endpoints":
			return loadEndpoints(cfg, v, at)
		}
		return []error{at(k, k.Value, errors.New("not a setting (the settings are listed in configs/ordersync.example.yaml)"))}
	}, at)
}

// nodeText is a YAML value as a setting's text: a scalar as it is, a list
// (for a setting that takes several) joined with commas.
func nodeText(n *yaml.Node, kind string) (string, error) {
	switch {
	case n.Kind == yaml.ScalarNode:
		return n.Value, nil
	case n.Kind == yaml.SequenceNode && kind == "strings":
		parts := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return "", errors.New("want a list of values")
			}
			parts = append(parts, item.Value)
		}
		return strings.Join(parts, ","), nil
	case kind == "strings":
		return "", errors.New("want a value or a list of values")
	}
	return "", errors.New("want a single value")
}

// joinProblems is every problem of a configuration, one per line.
func joinProblems(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &problems{errs: errs}
}

type problems struct{ errs []error }

func (p *problems) Error() string {
	lines := make([]string, len(p.errs))
	for i, err := range p.errs {
		lines[i] = "  " + err.Error()
	}
	return fmt.Sprintf("%d problems in the configuration:\n%s", len(p.errs), strings.Join(lines, "\n"))
}

func (p *problems) Unwrap() []error { return p.errs }

// at names a problem of the file by its line and key.
type at func(n *yaml.Node, key string, err error) error

// loadMapping reads a mapping of settings into dst, each value through its
// setting in table (a secret's _file variant through its file); other
// reads, or reports, a key the table lacks.
func loadMapping[T any](dst *T, table []setting[T], n *yaml.Node, prefix string, other func(k, v *yaml.Node) []error, at at) []error {
	var errs []error
	given := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		given[k.Value] = true
		if st, ok := secretByFileKey(table, k.Value); ok {
			if given[st.key] {
				errs = append(errs, at(k, prefix+k.Value, fmt.Errorf("give %s or %s, not both", prefix+st.key, prefix+k.Value)))
				continue
			}
			text, err := nodeText(v, "string")
			if err == nil {
				err = st.parseFile(dst, text)
			}
			if err != nil {
				errs = append(errs, at(v, prefix+k.Value, err))
			}
			continue
		}
		st, ok := settingByKey(table, k.Value)
		if !ok {
			errs = append(errs, other(k, v)...)
			continue
		}
		if st.secret && given[st.fileKey()] {
			errs = append(errs, at(k, prefix+k.Value, fmt.Errorf("give %s or %s, not both", prefix+st.key, prefix+st.fileKey())))
			continue
		}
		var err error
		if st.set.node != nil {
			err = st.set.node(dst, v)
		} else {
			var text string
			if text, err = nodeText(v, st.set.kind); err == nil {
				err = st.set.parse(dst, text)
			}
		}
		if err != nil {
			errs = append(errs, at(v, prefix+k.Value, err))
		}
	}
	return errs
}

// notIn reports a key that is none of table's settings, and names them.
func notIn[T any](what string, table []setting[T], prefix string, at at) func(k, _ *yaml.Node) []error {
	return func(k, _ *yaml.Node) []error {
		return []error{at(k, prefix+k.Value, fmt.Errorf("not %s setting (want %s)", what, keysOf(table)))}
	}
}

// loadEnv reads into dst each setting of table whose variable, prefix and
// its env, is set, or for a secret the variable of its file.
func loadEnv[T any](dst *T, table []setting[T], prefix string, getenv func(string) string) []error {
	var errs []error
	for _, st := range table {
		if st.env == "" {
			continue
		}
		v, file := getenv(prefix+st.env), ""
		if st.secret {
			file = getenv(prefix + st.fileEnv())
		}
		switch {
		case v != "" && file != "":
			errs = append(errs, fmt.Errorf("environment variables %s and %s: set one of them", prefix+st.env, prefix+st.fileEnv()))
		case v != "":
			if err := st.set.parse(dst, v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", prefix+st.env, err))
			}
		case file != "":
			if err := st.parseFile(dst, file); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", prefix+st.fileEnv(), err))
			}
		}
	}
	return errs
}
