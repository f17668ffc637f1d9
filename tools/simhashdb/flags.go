package main

import (
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a flag set that prints its usage, with an example, to
// stderr and reports errors instead of exiting.
func newFlagSet(name, synopsis, example string, stderr io.Writer) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s %s\n\nFlags:\n", programName, name, synopsis)
		fl.PrintDefaults()
		fmt.Fprintf(stderr, "\nFlags may come before, between or after the arguments; -- ends them.\n")
		fmt.Fprintf(stderr, "\nExample:\n%s\n", example)
		fmt.Fprintf(stderr, "\nExit codes: 0 success, 1 the command ran but some input failed (reported on stderr as FILE:LINE: problem)\nor the index could not be used, 2 bad command line.\n")
	}
	return fl
}

// parseFlags parses args, flags anywhere among the arguments (as GNU tools
// do: "add --db idx --text F --shingle 1" sets --shingle) up to a "--",
// after which everything is an argument. It returns the exit code to stop
// with, or -1 to go on; every flag is parsed before the command does
// anything. The standard library's flag package stops at the first
// argument; a loop around it does the rest, which a flag library would do
// at the cost of a dependency and of rewriting every command's flags.
func parseFlags(fl *flag.FlagSet, args []string) int {
	// A mistake gets one line naming the command and --help, not the flag
	// package's bare message and the whole help.
	out, usage := fl.Output(), fl.Usage
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	defer func() { fl.SetOutput(out); fl.Usage = usage }()
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			if err == flag.ErrHelp {
				fl.SetOutput(out)
				usage()
				return exitOK
			}
			fmt.Fprintf(out, "%s %s: %v (%s %s --help lists the flags)\n", programName, fl.Name(), err, programName, fl.Name())
			return exitUsage
		}
		rest := fl.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...) // Parse stopped at "--"
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	// Leave the arguments in fl.Args().
	if err := fl.Parse(append([]string{"--"}, pos...)); err != nil {
		return exitUsage
	}
	return -1
}

// noArguments refuses arguments to a command that takes only flags.
func noArguments(fl *flag.FlagSet) error {
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s takes flags only", fl.Args(), fl.Name())
	}
	return nil
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fl *flag.FlagSet, name string) bool {
	given := false
	fl.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
