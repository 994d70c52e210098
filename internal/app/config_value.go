package app

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// setting is one configuration knob: its YAML key (the flag is the same
// with dashes), its environment variable, which commands take it as a flag,
// and its value. The file, environment variables and flags all go through
// the value's one parser, so each reports a bad value the same way.
type setting[T any] struct {
	key, env, usage string
	flag            string // when the flag is not the key with dashes
	// scope is the commands that take it as a flag beside serve, which
	// takes them all; every command reads it from the file and environment.
	scope Scope
	set   value[T]

	// replaced marks a setting kept only to say what replaced it; the
	// example config leaves it out.
	replaced bool
	// reload marks a setting serve's reload (SIGHUP) applies in place;
	// any other that changed is reported as needing a restart.
	reload bool
	// secret marks a credential, which may also come from a file named by
	// its _file variant (see fileKey), so that a secret mounted as a file
	// never has to be copied into the config or the environment.
	secret bool
}

// A secret setting's file variant: key secret_key_file, variable
// ORDERSYNC_SECRET_KEY_FILE, flag --secret-key-file. Its value is a path;
// the setting's value is the file's contents, trimmed, read again at every
// load (serve's reload included). A list's file holds its entries
// separated by commas or lines.
func (st setting[T]) fileKey() string { return st.key + "_file" }

func (st setting[T]) fileEnv() string { return st.env + "_FILE" }

func (st setting[T]) fileFlag() string { return st.flagName() + "-file" }

// parseFile sets a secret setting from the file at path.
func (st setting[T]) parseFile(c *T, path string) error {
	path = strings.TrimSpace(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the secret's file: %w", err)
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		return fmt.Errorf("the secret's file %s is empty", path)
	}
	if st.set.kind == "strings" {
		text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }), ",")
	}
	return st.set.parse(c, text)
}

// value is how a setting reads and shows its text, in what holds it: the
// Config, or one account or endpoint of it.
type value[T any] struct {
	kind  string // the flag's type in help: string, strings, int, float, bool, duration
	parse func(c *T, v string) error
	show  func(c *T) string
	// node, when set, reads the setting's YAML value itself: for a value
	// the file can give in a richer shape than a flag's text.
	node func(c *T, n *yaml.Node) error
}

func str[T any](dst func(*T) *string) value[T] {
	return value[T]{kind: "string",
		parse: func(c *T, v string) error { *dst(c) = v; return nil },
		show:  func(c *T) string { return *dst(c) }}
}

func list[T any](dst func(*T) *[]string) value[T] {
	return value[T]{kind: "strings",
		parse: func(c *T, v string) error { *dst(c) = splitList(v); return nil },
		show:  func(c *T) string { return strings.Join(*dst(c), ",") }}
}

// scalar is a value of one field parsed from trimmed text by parse and
// shown by show; want names what a bad text is not.
func scalar[T, V any](kind, want string, dst func(*T) *V, parse func(string) (V, error), show func(V) string) value[T] {
	return value[T]{kind: kind,
		parse: func(c *T, v string) error {
			x, err := parse(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not %s", v, want)
			}
			*dst(c) = x
			return nil
		},
		show: func(c *T) string { return show(*dst(c)) }}
}

func integer[T any](dst func(*T) *int) value[T] {
	return scalar("int", "a whole number", dst, strconv.Atoi, strconv.Itoa)
}

func number[T any](dst func(*T) *float64) value[T] {
	return scalar("float", "a number", dst,
		func(s string) (float64, error) { return strconv.ParseFloat(s, 64) },
		func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) })
}

func boolean[T any](dst func(*T) *bool) value[T] {
	return scalar("bool", "true or false", dst, strconv.ParseBool, strconv.FormatBool)
}

func duration[T any](dst func(*T) *time.Duration) value[T] {
	return scalar("duration", "a duration (write it like 90s, 5m or 24h)", dst, time.ParseDuration,
		func(d time.Duration) string {
			if d == 0 {
				return "0"
			}
			return d.String()
		})
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (st setting[T]) flagName() string {
	if st.flag != "" {
		return st.flag
	}
	return strings.ReplaceAll(st.key, "_", "-")
}

// secretByFileKey is the secret setting whose _file variant key is.
func secretByFileKey[T any](table []setting[T], key string) (setting[T], bool) {
	for _, st := range table {
		if st.secret && st.fileKey() == key {
			return st, true
		}
	}
	return setting[T]{}, false
}

func settingByKey[T any](table []setting[T], key string) (setting[T], bool) {
	for _, st := range table {
		if st.key == key {
			return st, true
		}
	}
	return setting[T]{}, false
}

// keysOf is the keys of a table, as an error message lists them.
func keysOf[T any](table []setting[T]) string {
	keys := make([]string, len(table))
	for i, st := range table {
		keys[i] = st.key
	}
	return strings.Join(keys, ", ")
}

// describe is the settings of a table with what each is, for one who gave
// something other than a mapping of them.
func describe[T any](table []setting[T]) string {
	parts := make([]string, len(table))
	for i, st := range table {
		parts[i] = st.key + " (" + st.usage + ")"
	}
	return "want a mapping of its settings: " + strings.Join(parts, ", ")
}
