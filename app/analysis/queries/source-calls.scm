; Names a statement calls, and functions it passes along as callbacks (e.g. wait_until(5, 1, check)).
(call function: (identifier) @callee)
(call function: (attribute attribute: (identifier) @callee))
(argument_list (identifier) @ref)
(argument_list (attribute attribute: (identifier) @ref))
(keyword_argument value: (identifier) @ref)
(keyword_argument value: (attribute attribute: (identifier) @ref))
