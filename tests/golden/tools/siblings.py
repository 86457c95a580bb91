def generate(out, G, EX):
    pass
