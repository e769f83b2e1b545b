package steps

import "testing"

// TestShellEnvOutputAttacks performs attacks where data reaches a
// program that runs it as code through another program's output: the
// environment printed back (printenv, env, awk's ENVIRON, envsubst,
// /proc/self/environ), an inner shell or a function that prints it, a
// double-quoted inner script whose escapes the checker read wrongly, and
// a code reader hidden in an inner shell, a function or behind an
// option's value (sh -c 'cat | sh', f() { bash; }, bash -o posix).
func TestShellEnvOutputAttacks(t *testing.T) {
	t.Parallel()
	lines := "x\ntouch MARK" // runs touch whether a line or the whole is code
	runStreamAttacks(t, []streamAttack{
		{"printenv", "export V={{event.v}}; printenv V | sh", lines, "data from {{event.v}} is piped into sh"},
		{"env", ": {{event.v}}; env | sh", lines, "data from {{event.v}} is piped into sh"},
		{"printenv of the placeholder's variable", "echo {{event.v}} >/dev/null; printenv HOOKD_P1 | bash", lines, "is piped into bash"},
		{"command printenv", "V={{event.v}}; export V; command printenv V | sh", lines, "is piped into sh"},
		{"an inner shell echoing", "declare -x V={{event.v}}; sh -c 'echo \"$V\"' | sh", lines, "is piped into sh"},
		{"a double-quoted inner script", "export V={{event.v}}; sh -c \"echo \\\"\\$V\\\"\" | sh", lines, "is piped into sh"},
		{"a double-quoted inner eval", "export V={{event.v}}; sh -c \"x=\\$V; eval \\\"\\$x\\\"\"", lines, "is an argument of eval"},
		{"awk ENVIRON", "export V={{event.v}}; awk 'BEGIN{print ENVIRON[\"V\"]}' | sh", lines, "is piped into sh"},
		{"/proc/self/environ", ": {{event.v}}; cat /proc/self/environ | tr '\\0' '\\n' | sh", lines, "is piped into sh"},
		{"envsubst", "export V={{event.v}}; echo '$V' | envsubst | sh", lines, "is piped into sh"},
		{"a function printing it", "export V={{event.v}}; f() { printenv V; }; f | sh", lines, "is piped into sh"},
		{"eval of printenv", "export V={{event.v}}; eval \"$(printenv V)\"", lines, "the output of printenv (line 1) is an argument of eval"},
		{"assigned from env", ": {{event.v}}; x=$(env); eval \"$x\"", lines, "$x, which holds data from {{event.v}}, is an argument of eval"},
		{"here-string of printenv", "export V={{event.v}}; sh <<< \"$(printenv V)\"", lines, "is fed to sh"},
		{"script from a process substitution", "export V={{event.v}}; bash <(printenv V)", lines, "the script bash runs"},
		{"command named by printenv", "export V={{event.v}}; $(printenv V) MARK", "touch", "in command position"},
		// A code reader behind an inner shell, a function, an option.
		{"sh -c piping into sh", "printf '%s\\n' {{event.v}} | sh -c 'cat | sh'", "touch MARK", "is piped into sh -c (its script runs sh)"},
		{"eval of sh", "printf '%s\\n' {{event.v}} | eval sh", "touch MARK", "is piped into eval (its code runs sh)"},
		{"a function running bash", "f() { bash; }; printf '%s\\n' {{event.v}} | f", "touch MARK", "is piped into f (a function running bash)"},
		{"bash -o posix", "printf '%s\\n' {{event.v}} | bash -o posix", "touch MARK", "is piped into bash"},
		{"read into a here-string", "printf '%s\\n' {{event.v}} > f; read -r x < f; sh <<< \"$x\"", "touch MARK", "data read from input is fed to sh"},
	})
}
