package e2e

import (
	"os"
	"os/exec"
	"testing"
)

// inCI reports whether the environment variable CI is set: then a missing
// client tool fails the test instead of skipping it.
func inCI() bool { return os.Getenv("CI") != "" }

// missingTool skips the test, or fails it under CI, because of what.
func missingTool(t *testing.T, what string) {
	t.Helper()
	if inCI() {
		t.Fatalf("%s (CI is set, so this fails instead of skipping; .ci/run installs it)", what)
	}
	t.Skip(what)
}

// requireKcat returns the path of kcat (or kafkacat).
func requireKcat(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missingTool(t, "kcat not found in PATH")
	return ""
}

// requireConfluentPython returns a python3 interpreter that can import
// confluent_kafka. The system python is tried after the one in PATH, since
// version managers often put an interpreter without the distro's packages
// first.
func requireConfluentPython(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"python3", "/usr/bin/python3", "/usr/local/bin/python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import confluent_kafka").Run() == nil {
			return p
		}
	}
	missingTool(t, "no python3 with the confluent_kafka module")
	return ""
}

// requireKafkaPython returns a python3 with the kafka-python module
// (Debian's python3-kafka).
func requireKafkaPython(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"python3", "/usr/bin/python3", "/usr/local/bin/python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import kafka").Run() == nil {
			return p
		}
	}
	missingTool(t, "no python3 with the kafka module (kafka-python)")
	return ""
}
