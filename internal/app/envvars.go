package app

// EnvVars is every environment variable Load reads: each setting's, a
// secret's _FILE variant beside it, and ORDERSYNC_CONFIG. The deployment
// files are held to it (cmd/ordersync's TestDeployFiles). An account's
// variables (AccountEnvPrefix) apply only to the accounts a config file
// names, so they are not among them.
func EnvVars() []string {
	out := []string{"ORDERSYNC_CONFIG"}
	for _, st := range settings {
		out = append(out, st.env)
		if st.secret {
			out = append(out, st.fileEnv())
		}
	}
	return out
}
