package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// outputFormat is the --format flag of the listing commands: text tables
// for people, or one JSON document for scripts.
type outputFormat string

const (
	formatText outputFormat = "text"
	formatJSON outputFormat = "json"
)

// addFormatFlag adds --format text|json to cmd.
func addFormatFlag(cmd *cobra.Command, f *outputFormat) {
	*f = formatText
	cmd.Flags().Var(f, "format", "output format: text (a table) or json (one JSON document)")
}

func (f *outputFormat) String() string { return string(*f) }
func (f *outputFormat) Type() string   { return "text|json" }
func (f *outputFormat) Set(s string) error {
	switch outputFormat(s) {
	case formatText, formatJSON:
		*f = outputFormat(s)
		return nil
	}
	return fmt.Errorf("want text or json")
}

// json reports whether the output is JSON.
func (f outputFormat) json() bool { return f == formatJSON }

// writeJSON writes v as one indented JSON document and a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// errString is err's text, or "" for no error (omitted in JSON).
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
