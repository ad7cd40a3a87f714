print("tuisong")
