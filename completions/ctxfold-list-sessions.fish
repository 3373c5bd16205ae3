complete -c ctxfold-list-sessions -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-list-sessions -s V -l version -d 'Print version'
