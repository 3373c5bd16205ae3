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
complete -c ctxfold -n "__fish_ctxfold_needs_command" -s h -l help -d 'List the commands; before a command, show its manual (as `ctxfold help`)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "hash-object" -d 'Compute the object name (sha256 of the raw bytes) of files or stdin, and optionally store them'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "cat-object" -d 'Show an object\'s raw bytes (-p), size (-s) or existence (-e), or answer a batch of names on stdin'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "split" -d 'Segment a session file into fold-v1 parts, printed as JSON Lines'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "write-manifest" -d 'Commit a manifest from parts on stdin (as ctxfold-split prints them) and the session\'s fields'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "cat-manifest" -d 'Write a folded session\'s original bytes to stdout, verified as they stream'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "list-sessions" -d 'List the session files found, with the fields their manifests would record (JSON Lines)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "mirror" -d 'Commit the store\'s current state to the ctxfold branch of a git repository, and print the commit id'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "extract-seeds" -d 'Extract seed index v2 records (`fold-index`) from a Pi session or a Codex rollout'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "read-seeds" -d 'Print the union of seed-index files: the records that stand, one JSON line each'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "verify-span" -d 'Print a span\'s block text after checking it against its sha256'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "train-dict" -d 'Train a zstd dictionary on the store\'s objects and write new objects with it'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "fold" -d 'Fold sessions into the store (a dry run unless --apply)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "restore" -d 'Restore a folded session to disk, byte for byte and verified (alias: materialize)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "materialize" -d 'Restore a folded session to disk, byte for byte and verified (alias: materialize)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "ls" -d 'List the folded sessions: id, title, archived, source bytes, stored bytes'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "status" -d 'Show each session found: new, up to date, grown since folded, or changed'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "stats" -d 'Show what the store holds: logical, unique raw, stored and disk bytes, objects, ratios'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "fsck" -d 'Check the store: manifests readable, every object they name present (--full: and sound)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "gc" -d 'Remove objects no manifest references, and stale temp files (a dry run unless --apply)'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "remote" -d 'Add, remove or list the git remotes the store syncs with'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "sync" -d 'Sync the store with a git remote: mirror, fetch, merge, commit, push'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "clone" -d 'Make an empty store a copy of a remote\'s: the remote becomes `origin`, then the store syncs'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "seeds" -d 'Index folded sessions into the store\'s seed index'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "recall" -d 'Grep the seed index of every folded session and pull back whole spans, verified'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "help" -d 'Show a command\'s manual page, or list the commands'
complete -c ctxfold -n "__fish_ctxfold_needs_command" -f -a "version" -d 'Print ctxfold\'s version (as `ctxfold --version` does)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l level -d 'zstd level for new objects' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -s w -d 'Write the objects into the store, not only name them'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l stdin -d 'Read the object from stdin'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -l stdin-paths -d 'Read file paths from stdin, one per line, instead of from the command line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand hash-object" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s p -d 'Print the object\'s raw bytes'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s s -d 'Print the object\'s raw size in bytes'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s e -d 'Exit 0 when the object exists and is intact, 1 otherwise; print nothing'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -l batch -d 'For each name on stdin print `<sha256> blob <size>`, the bytes, and a newline'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -l batch-check -d 'For each name on stdin print `<sha256> blob <size>`'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-object" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l field-threshold -d 'String values whose raw token is at least this many bytes become field parts' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l max-json-line-bytes -d 'Lines longer than this (with their newline) are not parsed, only chunked' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l cdc-min-bytes -d 'FastCDC minimum chunk size for the bytes between fields' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l cdc-average-bytes -d 'FastCDC average chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l cdc-max-bytes -d 'FastCDC maximum chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l level -d 'zstd level for new objects' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand split" -l write -d 'Store each part\'s object (new ones compressed; present ones only touched)'
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
complete -c ctxfold -n "__fish_ctxfold_using_subcommand write-manifest" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -l manifest -d 'Read this manifest file instead of the store\'s manifest for a session' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand cat-manifest" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand list-sessions" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand mirror" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand mirror" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand mirror" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l session -d 'Read the folded session with this id out of the store' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l through -d 'Give the record of one fold event up to this entry (a Pi entry id or a line number)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l trigger -d 'The fold event\'s trigger' -r -f -a "threshold\t''
cap\t''"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l seq -d 'The fold event\'s seq' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l tokens -d 'The context\'s size in tokens at the fold event' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l context-window -d 'The model\'s context window in tokens' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -l final -d 'Add a `compact` record over the whole active branch'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand extract-seeds" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand read-seeds" -l pi-session -d 'Read the extension\'s seed index of this Pi session file' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand read-seeds" -l session -d 'Read the store\'s seed index of this session' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand read-seeds" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand read-seeds" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand verify-span" -l sha256 -d 'The span\'s sha256 (hex): the text is printed only if it matches' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand verify-span" -l session -d 'Read the folded session with this id out of the store' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand verify-span" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand verify-span" -l batch -d 'Check the spans listed on stdin (`BLOCKID<TAB>SHA256` lines)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand verify-span" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l max-size -d 'Largest dictionary to train, in bytes' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l sample-bytes -d 'How many bytes of objects to train on at most' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l max-object-bytes -d 'Objects stored in more than this many bytes are left out (they gain little)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l use -d 'Instead of training, write new objects with this registered dictionary (`none`: without)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -l no-use -d 'Register the dictionary but keep writing new objects as before'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand train-dict" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l field-threshold -d 'String values whose raw token is at least this many bytes become field parts' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l max-json-line-bytes -d 'Lines longer than this (with their newline) are not parsed, only chunked' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l cdc-min-bytes -d 'FastCDC minimum chunk size for the bytes between fields' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l cdc-average-bytes -d 'FastCDC average chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l cdc-max-bytes -d 'FastCDC maximum chunk size' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l level -d 'zstd level for new objects' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l apply -d 'Commit (without it, a dry run that writes nothing)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l overwrite -d 'Replace the manifest of a session folded earlier with other bytes'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l remove-source -d 'Remove each archived source once its manifest is committed and its reconstruction verified'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l allow-active -d 'With --remove-source, remove active (not archived) sources too'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l no-seeds -d 'Do not extract the seed index of the folded sessions'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l json -d 'One JSON object per session, then one with the totals (JSON Lines)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -l dry-run -d 'Change nothing, only report (the default without --apply)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fold" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -l to -d 'Where to write it [default: the manifest\'s rollout_path]' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -l overwrite -d 'Replace an existing file at the target'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand restore" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -l to -d 'Where to write it [default: the manifest\'s rollout_path]' -r -F
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -l overwrite -d 'Replace an existing file at the target'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand materialize" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand ls" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand ls" -l json -d 'One JSON object per session (JSON Lines)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand ls" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand ls" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand ls" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand status" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand status" -l json -d 'One JSON object per session (JSON Lines)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand status" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand status" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand status" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand stats" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand stats" -l json -d 'One JSON object (JSON Lines)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand stats" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand stats" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand stats" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fsck" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fsck" -l full -d 'Also decompress and re-hash every object and reconstruct every manifest'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fsck" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fsck" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand fsck" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -l prune -d 'Keep unreferenced objects and temp files younger than this: `now`, or a number with s, m, h, d or w (`30m`, `2d`)' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -l apply -d 'Remove (without it, list what would be removed)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -l dry-run -d 'Change nothing, only report (the default without --apply)'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand gc" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -f -a "add" -d 'Add a remote'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -f -a "remove" -d 'Remove a remote'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and not __fish_seen_subcommand_from add remove list" -f -a "list" -d 'List the remotes: name, a tab, URL (with --json, JSON Lines {"name","url"})'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from add" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from add" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from add" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from add" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from remove" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from remove" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from remove" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from remove" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from list" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from list" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from list" -l json -d 'JSON Lines'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand remote; and __fish_seen_subcommand_from list" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand sync" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand sync" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand sync" -l json -d 'One JSON object instead of text'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand sync" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand sync" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand sync" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand clone" -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand clone" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand clone" -l json -d 'One JSON object instead of text'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand clone" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand clone" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand clone" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand seeds" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand seeds" -l json -d 'JSON Lines: `{"session":…,"appended":N}` per session'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand seeds" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand seeds" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand seeds" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -l session -d 'Only this session' -r
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -l field -d 'Only these fields of the records [default: all four]' -r -f -a "identifiers\t''
errors\t''
files\t''
commands\t''"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -s F -l fixed-strings -d 'PATTERN is a fixed string'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -s i -l ignore-case -d 'Ignore case'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -s l -l list -d 'List the spans (headers only), without their text'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -l json -d 'JSON Lines'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -s q -l quiet -d 'Say nothing on stderr but warnings and errors'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -s v -l verbose -d 'Say more on stderr: the items behind each summary line'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand recall" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand help" -s a -l all -d 'List the plumbing and the programs on the exec path too'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand help" -s V -l version -d 'Print version'
complete -c ctxfold -n "__fish_ctxfold_using_subcommand version" -s V -l version -d 'Print version'
