package cli

import (
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_samsa",
		"zsh":        "#compdef samsa",
		"fish":       "complete -c samsa",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := mustRun(t, "", "completion", shell)
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s does not contain %q:\n%.300s", shell, want, r.stdout)
		}
	}
	r := runCLI(t, "", "completion", "tcsh")
	if r.code != ExitMisuse || !strings.Contains(r.stderr, `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: exit %d, stderr %q", r.code, r.stderr)
	}
	// The scripts ask samsa itself; its answer lists the subcommands.
	r = mustRun(t, "", "__complete", "topic", "")
	for _, sub := range []string{"create", "describe", "list"} {
		if !strings.Contains(r.stdout, sub) {
			t.Errorf("__complete topic: %q does not offer %s", r.stdout, sub)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	tests := []struct {
		args    []string
		suggest string
	}{
		{[]string{"tpoic"}, "topic"},
		{[]string{"consum"}, "consume"},
		{[]string{"topic", "craete"}, "create"},
		{[]string{"group", "descirbe"}, "describe"},
		{[]string{"cluster", "descr"}, "describe"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", tt.args...)
		want := "Did you mean this?\n\t" + tt.suggest + "\n"
		if r.code != ExitMisuse || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, r.code, r.stderr, want)
		}
	}
	// Nothing close: no suggestion.
	if r := runCLI(t, "", "frobnicate"); strings.Contains(r.stderr, "Did you mean") {
		t.Errorf("frobnicate: stderr %q suggests something", r.stderr)
	}
}
