# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ctxfold_global_optspecs
    string join \n exec-path= h/help V/version
end

function __fish_ctxfold_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ctxfold_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ctxfold_using_subcommand
    set -l cmd (__fish_ctxfold_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ctxfold -n "__fish_ctxfold_needs_command" -l exec-path -d 'Without a value, print where plumbing is found; with one, look there first' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "help" -d 'Show the manual page of a command (or its long help where man is missing)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "hash-object" -d 'Compute the object name (sha256 of the raw bytes) of files or stdin, and optionally store them'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "cat-object" -d 'Show an object\'s raw bytes (-p), size (-s) or existence (-e), or answer a batch of names on stdin'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "split" -d 'Segment a session file into fold-v1 parts, printed as JSON Lines'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "write-manifest" -d 'Commit a manifest from parts on stdin (as ctxfold-split prints them) and the session\'s fields'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "cat-manifest" -d 'Write a folded session\'s original bytes to stdout, verified as they stream'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "train-dict" -d 'Train a zstd dictionary on the store\'s objects and write new objects with it'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "restore" -d 'Restore a folded session to disk, byte for byte and verified (alias: materialize)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "materialize" -d 'Restore a folded session to disk, byte for byte and verified (alias: materialize)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand help" -s a -l all -d 'List every command'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand help" -s h -l help -d 'Print help'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l level -d 'zstd level for new objects' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -s w -d 'Write the objects into the store, not only name them'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l stdin -d 'Read the object from stdin'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l stdin-paths -d 'Read file paths from stdin, one per line, instead of from the command line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s p -d 'Print the object\'s raw bytes'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s s -d 'Print the object\'s raw size in bytes'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s e -d 'Exit 0 when the object exists and is intact, 1 otherwise; print nothing'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -l batch -d 'For each name on stdin print `<sha256> blob <size>`, the bytes, and a newline'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -l batch-check -d 'For each name on stdin print `<sha256> blob <size>`'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l field-threshold -d 'String values whose raw token is at least this many bytes become field parts' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l max-json-line-bytes -d 'Lines longer than this (with their newline) are not parsed, only chunked' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l cdc-min-bytes -d 'FastCDC minimum chunk size for the bytes between fields' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l cdc-average-bytes -d 'FastCDC average chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l cdc-max-bytes -d 'FastCDC maximum chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l level -d 'zstd level for new objects' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l write -d 'Store each part\'s object (new ones compressed; present ones only touched)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l session-id -d 'The session id, which names the manifest file (a plain file name)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l source -d 'The file the parts were cut from; its sha256 and size (decompressed, for a `.zst`) are what the parts must rebuild' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l title -d 'The session\'s title' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l cwd -d 'The session\'s working directory' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l rollout-path -d 'Where restore puts the session back [default: the absolute path of --source, without the `.zst` of a compressed one: restore writes the plain JSONL, which Codex prefers]' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l field-threshold -d 'String values whose raw token is at least this many bytes become field parts' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l max-json-line-bytes -d 'Lines longer than this (with their newline) are not parsed, only chunked' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l cdc-min-bytes -d 'FastCDC minimum chunk size for the bytes between fields' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l cdc-average-bytes -d 'FastCDC average chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l cdc-max-bytes -d 'FastCDC maximum chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l archived -d 'Mark the session archived'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -l overwrite -d 'Replace an existing manifest for this session'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -l manifest -d 'Read this manifest file instead of the store\'s manifest for a session' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l max-size -d 'Largest dictionary to train, in bytes' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l sample-bytes -d 'How many bytes of objects to train on at most' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l max-object-bytes -d 'Objects stored in more than this many bytes are left out (they gain little)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l use -d 'Instead of training, write new objects with this registered dictionary (`none`: without)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l no-use -d 'Register the dictionary but keep writing new objects as before'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -l to -d 'Where to write it [default: the manifest\'s rollout_path]' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -l overwrite -d 'Replace an existing file at the target'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -l to -d 'Where to write it [default: the manifest\'s rollout_path]' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -l overwrite -d 'Replace an existing file at the target'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -s V -l version -d 'Print version'
