import logging
logging.basicConfig(format="[%(levelname)s] %(message)s", level=logging.INFO)

def check(n):
    if n == 2:
        raise KeyError(n)
    raise ValueError(n)

def main():
    errors = []
    for n in (1, 2):
        try:
            check(n)
        except Exception as e:
            errors.append(e)
    logging.info("collected %d errors", len(errors))
    raise ExceptionGroup("checks failed", errors)

main()
