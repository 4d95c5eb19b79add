print("orchard")
